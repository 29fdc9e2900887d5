/*
 * An exchange: one stream of messages to a client, the answers to one POST
 * or a session's standing GET stream. The endpoint supplies delivery; the
 * session and hub only send into it. Reference-counted, so a call that
 * outlives its HTTP request finds the exchange detached instead of freed.
 * A recorder (the session) may number and keep every message, so a client
 * that reconnects with Last-Event-ID gets what it missed.
 */
#ifndef MCPV_EXCHANGE_H
#define MCPV_EXCHANGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct exchange;

struct exchange_ops {
	/* A message for the client, borrowed: msg, or (when msg is NULL)
	 * only its text. event_id and data are set when a recorder numbered
	 * and serialized it (SSE), or data alone for a message sent as text;
	 * else NULL. */
	void (*deliver)(void *ctx, json_t *msg, const char *event_id,
			const char *data, size_t len);
	/* Every expected response has been delivered. */
	void (*finish)(void *ctx);
	/* Optional, for an HTTP side that sets the recorder only when its
	 * answer streams: called before a message goes while the exchange
	 * has none, so the HTTP side can set one now (session_stream_open)
	 * and the message is numbered and kept. last: the message is the
	 * answer that ends the exchange; len: its text's length. */
	void (*opening)(void *ctx, size_t len, bool last);
};

/* The longest event id a recorder writes, with its NUL. */
#define EXCHANGE_EVENT_ID_MAX 48

/* Numbers and keeps a message as an event of stream: text (taken, len
 * bytes) when not NULL, else msg serialized. Writes the event id into id
 * (EXCHANGE_EVENT_ID_MAX bytes) and its number into *event, and returns
 * the text to deliver; *len gets its length. The text stays owned by the
 * recorder, unless the recorder did not keep it (an event over its
 * bound): then *spill is set and the caller frees it after delivery. */
typedef const char *(*exchange_record_fn)(void *rctx, uint64_t stream,
					  json_t *msg, char *text, size_t *len,
					  char *id, uint64_t *event,
					  char **spill);

/* A request the exchange answers. Kept with the exchange (its id and one
 * bit of its method, not its answer) so a client that resumes a stream
 * late can be told of an answer it can no longer get, instead of waiting
 * for it. */
struct exchange_req {
	json_t *id;
	bool safe;	/* changes nothing (jr_method_is_idempotent) */
	bool answered;	/* an answer was sent (skipped ones never are) */
	uint64_t event; /* the recorded event that carried it; 0: none */
};

/* expected: how many responses end it; 0 for a standing stream. Returns
 * with one reference, the endpoint's. */
struct exchange *exchange_new(const struct exchange_ops *ops, void *ctx,
			      unsigned expected);
void exchange_ref(struct exchange *ex);
void exchange_unref(struct exchange *ex);

void exchange_set_recorder(struct exchange *ex, exchange_record_fn fn,
			   void *rctx, uint64_t stream);
void exchange_clear_recorder(struct exchange *ex);
uint64_t exchange_stream(const struct exchange *ex);

/* Registers a request the exchange answers (id borrowed; method tells
 * whether it changes anything). At most as many as the exchange expects;
 * an answer sent into it is matched to its request by id. All of them
 * before a recorder (session_stream_open) counts what they cost. */
void exchange_expect(struct exchange *ex, json_t *id, const char *method);
/* The registered requests, in order (n of them). */
const struct exchange_req *exchange_reqs(const struct exchange *ex, size_t *n);
/* Bytes the registered requests hold: what keeping the exchange's record
 * after it ended costs. 0 when none were registered. */
size_t exchange_footprint(const struct exchange *ex);

/* Delivers msg (borrowed) unless detached, recording it first; a response
 * counts toward the expected ones, and the last one finishes the exchange
 * (when attached). */
void exchange_send(struct exchange *ex, json_t *msg);
/* The same for a message that is already text (taken): the forwarding
 * path passes a server's answer on without parsing it. */
void exchange_send_text(struct exchange *ex, char *text, size_t len,
			bool response);
/* An expected response that will not come (its request was cancelled). */
void exchange_skip(struct exchange *ex);
/* Ends a standing stream from this side (its session ended, or a newer
 * stream took its place): the HTTP answer is finished, then detached. */
void exchange_end(struct exchange *ex);
/* The HTTP side is gone (or done): nothing is delivered any more. */
void exchange_detach(struct exchange *ex);
/* A new HTTP side takes over a detached exchange (a resumed stream).
 * -EBUSY when another HTTP side still holds it: a stream has one owner. */
int exchange_rebind(struct exchange *ex, const struct exchange_ops *ops,
		    void *ctx);
bool exchange_attached(const struct exchange *ex);
/* The calls of ex wait for their client, who was asked what their server
 * asked and has not come back yet (a 2026-07-28 client answered
 * input_required): the server waits too, so the next question of that
 * server is likelier another call's (session_cause_on). */
void exchange_set_waits_client(struct exchange *ex, bool on);
bool exchange_waits_client(const struct exchange *ex);
/* Every expected response was sent (never true for a standing stream). */
bool exchange_finished(const struct exchange *ex);
bool exchange_standing(const struct exchange *ex);

#endif
