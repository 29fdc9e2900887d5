/*
 * The relay core's private parts, shared by relay.c (the session, losses,
 * recovery) and modern.c (what MCP 2026-07-28 messages need of it: the
 * era of a host message, the listens the host keeps open).
 */
#ifndef MCPV_RELAY_RELAY_INT_H
#define MCPV_RELAY_RELAY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonrpc/outbox.h"
#include "relay/recall.h"
#include "relay/relay.h"
#include "util/jsonscan.h"

enum relay_state {
	RS_DOWN,       /* no session; the next request recovers */
	RS_RECOVERING, /* ops->recover runs */
	RS_INIT,       /* our own initialize is in flight */
	RS_LIVE,
};

enum rreq_kind {
	RK_HOST,   /* the host's: answered to it */
	RK_INIT,   /* our re-initialize */
	RK_REPLAY, /* setLevel, subscribe again: answer dropped */
	RK_PROBE,  /* a list the host saw, asked of a new runtime */
	RK_LISTEN, /* one link's subscriptions/listen for a host listen */
};

/* A listen the runtime ended this many times on one runtime (its answer,
 * or its stream cut while the runtime lives): the host is told. */
#define RELAY_RELISTEN_MAX 3

struct rlisten;

struct rreq {
	struct relay *r;
	enum rreq_kind kind;
	char *host_id;	    /* raw JSON text of the host's id */
	uint64_t wait_from; /* arrival or the loss it waits through */
	uint64_t written;   /* when it went on the current link */
	bool orphan;	    /* its stream ended: decided after a ping */
	bool modern;	    /* MCP 2026-07-28: sent with link_send_modern */
	/* The rule's verdict, answered once recovery says why the runtime
	 * was lost (OUTBOX_RESEND: nothing owed). */
	enum outbox_verdict owed;
	enum relay_list list;	/* a first-page list request, else RL_NONE */
	struct rlisten *listen; /* RK_LISTEN: whose; NULL once let go */
};

/* A subscriptions/listen of the host's: it lasts as long as the host's
 * stdio session (or until the host cancels it), across runtimes; each
 * runtime gets a request of its own (an RK_LISTEN, ours). */
struct rlisten {
	char *host_id; /* raw JSON text of the host's id */
	char *line;    /* the host's request, as sent */
	size_t len;
	int64_t ours;	     /* the RK_LISTEN on the link now; 0: none */
	uint64_t wait_from;  /* not yet acknowledged: as rreq's */
	bool acked;	     /* the host had its acknowledgement */
	uint64_t acked_link; /* the link of the runtime that acknowledged */
	uint64_t ends_link;  /* ends counted on this link */
	unsigned ends;
	struct rlisten *next;
};

struct relay {
	const struct relay_ops *ops;
	void *ctx;
	struct outbox *ob;
	enum relay_state state;
	char *init_line; /* the host's initialize, as sent */
	size_t init_len;
	unsigned init_tries; /* our initialize lost in a row */
	struct replay *replays;
	struct relay_lists lists; /* what the host last saw of each list */
	struct rlisten *listens;
	uint64_t last_life;  /* last byte or heartbeat from the runtime */
	uint64_t ping_at;    /* 0: no ping in flight */
	uint64_t lives;	     /* signs of life, counted */
	uint64_t ping_lives; /* lives when the ping went */
	uint64_t links;	     /* sessions opened */
	unsigned recoveries;
	bool host_initialized;
	/* A request was refused while others run on this runtime (one
	 * draining for a restart): new ones wait until those end. */
	bool hold;
};

static const char *const relay_msg_keys[] = {"id", "method", "params"};
enum { K_ID, K_METHOD, K_PARAMS, K_N };

/* ---- relay.c, for modern.c and host.c ---- */

struct outbox_req *relay_req_add(struct relay *r, enum rreq_kind kind,
				 const char *method, const char *line,
				 size_t len,
				 const struct jsonscan_span *id_span);
void relay_req_send(struct relay *r, struct outbox_req *o);
void relay_req_cancel(struct relay *r, struct outbox_req *o);
void relay_host_error(struct relay *r, const char *id, int code,
		      const char *text);
/* Whether a request of this era may go on the link now. */
bool relay_may_send(const struct relay *r, bool modern);

/* ---- relay.c, for host.c ---- */

/* The runtime is lost (why): the relay's own requests go with the
 * session, the host's are judged by the outbox's rule and answered when
 * recovery says why, and recovery begins. */
void relay_loss(struct relay *r, enum relay_loss why);
/* Asks ops->arm for the next moment the watch must look: a written
 * request's silence, a ping's timeout, a recovery's cap. */
void relay_arm(struct relay *r);
/* Held requests go to the next runtime once the old one has answered
 * what it was running. */
void relay_hold_check(struct relay *r);

/* ---- modern.c ---- */

/* Whether the message's params._meta carries the 2026-07-28 protocol
 * version claim. params: the span of its "params" (len 0: none). */
bool relay_modern_claims(const char *line, size_t len,
			 const struct jsonscan_span *params);
/* The host's subscriptions/listen (modern): kept, and sent when the link
 * allows. */
void relay_listen_start(struct relay *r, const char *line, size_t len,
			const struct jsonscan_span *id_span);
/* A message on the stream of RK_LISTEN o. */
void relay_listen_message(struct relay *r, struct outbox_req *o,
			  const char *msg, size_t len);
/* RK_LISTEN o's stream ended with no answer while the runtime lives. */
void relay_listen_cut(struct relay *r, struct outbox_req *o);
/* The host's notifications/cancelled named a listen's id: true when it
 * did (the listen is let go, its stream dropped, no answer). */
bool relay_listen_cancel(struct relay *r, const char *host_id);
/* Sends a listen on the link for each that has none (after a recovery). */
void relay_listens_resume(struct relay *r);
/* At a loss: listens not yet acknowledged wait from now. */
void relay_listens_lost(struct relay *r, uint64_t now);
/* Each listen is answered with text (an error) and let go. */
void relay_listens_fail(struct relay *r, const char *text);
/* One listen, after its RK_LISTEN got an error answer from the relay. */
void relay_listen_fail_of(struct relay *r, struct rlisten *rl, int code,
			  const char *text);
/* Listens not acknowledged that waited past the recovery cap: answered. */
void relay_listens_cap(struct relay *r, uint64_t now);
/* The earliest cap of a listen not acknowledged, 0: none. */
uint64_t relay_listens_next_cap(const struct relay *r);
/* Listens written on link (they never end by themselves: not waited for
 * by a hold). */
size_t relay_listens_written(const struct relay *r, uint64_t link);
void relay_listens_free(struct relay *r);

#endif
