/*
 * The outbox: the requests in flight toward one peer, each a stable handle
 * (its id, kept across a re-send) with one owner and exactly one outcome,
 * and THE resend rule. A request is queued (not on any connection now) or
 * written (on the connection of one generation), and leaves the outbox
 * only through outbox_settle: answered, lost before it was sent, lost
 * after it was sent, or cancelled.
 *
 * When a request's answer will not come, its owner reports what is known
 * of it (an outbox_fact, from the transport, mcpc or the relay's link,
 * always with the request's id) to outbox_judge, which decides: send it
 * again, or answer that it did not run, or that it may or may not have
 * taken effect. Nothing else decides a re-send: a request that changes
 * something and may have reached a server is never written twice
 * (outbox_may_write says so to every writer).
 *
 * Transport-neutral: the instance (every transport) and the relay keep
 * their requests here; it sends nothing.
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

/* What is known of a request whose answer will not come on the
 * connection it was written on. */
enum outbox_fact {
	/* No byte of it left: the connection was refused, a local error,
	 * or it was never started. */
	OUTBOX_UNWRITTEN,
	/* It left, and the answer proves the server did not process it: an
	 * HTTP 404 for a session the server no longer knows; a 503 from a
	 * peer that refuses before it reads (the mcpvisor runtime). */
	OUTBOX_REFUSED,
	/* It left, and its answer will not come: the connection or its
	 * stream was lost, the server died, the answer could not be read. */
	OUTBOX_CUT,
	/* Not about the request: its owner will send nothing more (a stop,
	 * a drain, a server given up on). */
	OUTBOX_ENDING,
};

/* A fact about one request, by the id its writer gave it. */
struct outbox_fact_of {
	int64_t id;
	enum outbox_fact fact;
};

/* What outbox_judge decided. */
enum outbox_verdict {
	OUTBOX_RESEND,	   /* queued again: it goes on the next connection */
	OUTBOX_FAIL_UNRUN, /* answer with an error: it did not run, or it
			      changes nothing */
	OUTBOX_FAIL_MAYBE, /* answer with an error: it may or may not have
			      taken effect (never sent again) */
};

/* Writes of one request that may not have reached its peer (refused,
 * unwritten) before it is given up on. */
#define OUTBOX_MAX_ATTEMPTS 3

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

/* Whether the rule lets r be written now: false for a request that
 * changes something and may already have reached a server. Every writer
 * asks before writing. */
bool outbox_may_write(const struct outbox_req *r);
/* The request was written on the connection of generation link (it may
 * reach the server from now on). */
void outbox_written(struct outbox *ob, struct outbox_req *r, uint64_t link);
/* Back to QUEUED (its connection was lost; it will be sent again). */
void outbox_requeue(struct outbox *ob, struct outbox_req *r);

/* THE resend rule, pure: what fact f means for r as it stands. */
enum outbox_verdict outbox_rule(const struct outbox_req *r, enum outbox_fact f);
/* Records fact f on r and applies the rule: on OUTBOX_RESEND, r is queued
 * again (the owner writes it when it can); otherwise the owner answers
 * it as the verdict says (outbox_req_reached tells whether the answer is
 * LOST_SENT) and settles it. */
enum outbox_verdict outbox_judge(struct outbox *ob, struct outbox_req *r,
				 enum outbox_fact f);

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
/* Of those, the writes that may have reached the server (not proven
 * unwritten or refused). */
unsigned outbox_req_reached(const struct outbox_req *r);
/* The method changes nothing (jr_method_is_idempotent). */
bool outbox_req_idempotent(const struct outbox_req *r);
/* The owner's own (handshake, list refresh), not a client's. */
bool outbox_req_internal(const struct outbox_req *r);
/* The arg its callbacks get (whose request it is). */
void *outbox_req_arg(const struct outbox_req *r);
const char *outbox_req_method(const struct outbox_req *r);
/* Kept for a re-send (borrowed), or NULL. set takes params and drops
 * what was kept. */
json_t *outbox_req_params(const struct outbox_req *r);
void outbox_req_set_params(struct outbox_req *r, json_t *params);
/* The whole message as written, kept to write again unchanged (its id
 * is stable), or NULL. set copies len bytes (NULL drops it). */
const char *outbox_req_msg(const struct outbox_req *r, size_t *len);
void outbox_req_set_msg(struct outbox_req *r, const char *msg, size_t len);
/* What the owner keeps to describe it, not to send (a tool's name for a
 * timeout's message): borrowed, or NULL. set takes hint. */
json_t *outbox_req_hint(const struct outbox_req *r);
void outbox_req_set_hint(struct outbox_req *r, json_t *hint);
/* Its owner can write it again: it keeps its params or its message. */
bool outbox_req_kept(const struct outbox_req *r);
/* When it times out (clock ms), 0: never. */
uint64_t outbox_req_deadline(const struct outbox_req *r);
void outbox_req_set_deadline(struct outbox_req *r, uint64_t ms);
void outbox_req_set_text_cb(struct outbox_req *r, outbox_text_cb text_cb);
/* Whether a successful answer may go to text_cb (outbox_settle_text). */
bool outbox_req_has_text(const struct outbox_req *r);

/* Calls fn for each request in flight, oldest first, as it stood when
 * the walk began (a snapshot of ids: fn may settle or add any request;
 * one settled before its turn is skipped, one added is not visited). fn
 * returns false to stop the walk. */
void outbox_each(struct outbox *ob, bool (*fn)(void *arg, struct outbox_req *r),
		 void *arg);

size_t outbox_count(const struct outbox *ob);
/* Requests not internal: a client's. */
size_t outbox_count_external(const struct outbox *ob);
/* Written on the connection of generation link and not answered. */
size_t outbox_count_written(const struct outbox *ob, uint64_t link);

#endif
