/*
 * The outbox: the requests in flight toward one server, each a stable
 * handle (its id, kept across a re-send) with one owner and exactly one
 * outcome. A request is queued (not on any connection now) or written (on
 * the connection of one generation), and leaves the outbox only through
 * outbox_settle: answered, lost before it was sent, lost after it was
 * sent, or cancelled. Transport-neutral: the stdio instance, the HTTP
 * upstream and the relay keep their requests here; it sends nothing.
 */
#ifndef MCPV_JSONRPC_OUTBOX_H
#define MCPV_JSONRPC_OUTBOX_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The answer, or one made up for a lost request; borrowed. sent: the
 * request had been written (it may have reached the server). */
typedef void (*outbox_reply_cb)(void *arg, json_t *response, bool sent);
/* A successful answer as text: the whole message and where its result
 * lies (no parse). */
typedef void (*outbox_text_cb)(void *arg, const char *msg, size_t off,
			       size_t len);

enum outbox_state {
	OUTBOX_QUEUED,	/* waiting to be (re-)sent; not on any connection */
	OUTBOX_WRITTEN, /* written on the connection of generation link */
};

enum outbox_outcome {
	OUTBOX_ANSWERED,    /* the server answered: cb gets its answer */
	OUTBOX_LOST_UNSENT, /* never reached a server: cb, sent false */
	OUTBOX_LOST_SENT,   /* written, and its answer never came: cb */
	OUTBOX_CANCELLED,   /* its owner let go: no callback */
};

struct outbox_req;
struct outbox;

struct outbox *outbox_new(void);
/* Frees what is left without callbacks (settle everything first). */
void outbox_free(struct outbox *ob);

/* A new request under the next id, QUEUED; method copied, params taken
 * (may be NULL). */
struct outbox_req *outbox_add(struct outbox *ob, const char *method,
			      json_t *params, bool internal, outbox_reply_cb cb,
			      outbox_text_cb text_cb, void *arg);
/* The id the next outbox_add will take. */
int64_t outbox_peek_id(const struct outbox *ob);
/* O(1); NULL when the id is not (or no longer) in flight. */
struct outbox_req *outbox_find(const struct outbox *ob, int64_t id);

/* The request was written on the connection of generation link. */
void outbox_written(struct outbox *ob, struct outbox_req *r, uint64_t link);
/* Back to QUEUED (its connection was lost; it will be sent again). */
void outbox_requeue(struct outbox *ob, struct outbox_req *r);

/* Its one outcome: takes r out, calls its callback once as the outcome
 * says (response borrowed; NULL for CANCELLED), then frees it. */
void outbox_settle(struct outbox *ob, struct outbox_req *r,
		   enum outbox_outcome how, json_t *response);
/* Answered with text: text_cb (which must be set) instead of cb. */
void outbox_settle_text(struct outbox *ob, struct outbox_req *r,
			const char *msg, size_t off, size_t len);

/* Oldest first; safe to settle the current one while walking when the
 * next was taken before. */
struct outbox_req *outbox_first(const struct outbox *ob);
struct outbox_req *outbox_next(const struct outbox *ob,
			       const struct outbox_req *r);

/* What a request is, for its owner. */
int64_t outbox_req_id(const struct outbox_req *r);
enum outbox_state outbox_req_state(const struct outbox_req *r);
/* Written on the connection of generation link (and not answered). */
bool outbox_req_on(const struct outbox_req *r, uint64_t link);
/* Times written, across connections (a re-send makes 2). */
unsigned outbox_req_sends(const struct outbox_req *r);
/* The owner's own (handshake, list refresh), not a client's. */
bool outbox_req_internal(const struct outbox_req *r);
/* The arg its callbacks get (whose request it is). */
void *outbox_req_arg(const struct outbox_req *r);
const char *outbox_req_method(const struct outbox_req *r);
/* Kept for a re-send (borrowed), or NULL. set takes params and drops
 * what was kept. */
json_t *outbox_req_params(const struct outbox_req *r);
void outbox_req_set_params(struct outbox_req *r, json_t *params);
/* When it times out (clock ms), 0: never. */
uint64_t outbox_req_deadline(const struct outbox_req *r);
void outbox_req_set_deadline(struct outbox_req *r, uint64_t ms);
void outbox_req_set_text_cb(struct outbox_req *r, outbox_text_cb text_cb);
/* Whether a successful answer may go to text_cb (outbox_settle_text). */
bool outbox_req_has_text(const struct outbox_req *r);

size_t outbox_count(const struct outbox *ob);
/* Requests not internal: a client's. */
size_t outbox_count_external(const struct outbox *ob);
/* Written on the connection of generation link and not answered. */
size_t outbox_count_written(const struct outbox *ob, uint64_t link);

#endif
