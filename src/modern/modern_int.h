/*
 * Inside the modern room: a principal's hidden session in a space, a
 * modern request under way (a call, maybe waiting for its client's retry,
 * or a listen stream), and what front.c, bridge.c and listen.c share.
 * Not for use outside src/modern/.
 */
#ifndef MCPV_MODERN_INT_H
#define MCPV_MODERN_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "modern/modern.h"
#include "modern/reqstate.h"
#include "session/exchange.h"
#include "session/session.h"

/* Server requests that come within this of the first go into the same
 * input_required round (a server that asks several at once). */
#define MODERN_GATHER_MS 10
/* Rounds of input_required one call may take. */
#define MODERN_MAX_ROUNDS 32
/* Hidden sessions the modern side keeps (one per principal and space). */
#define MODERN_MAX_SPACES 256
/* Listen streams of one hidden session. */
#define MODERN_MAX_LISTENERS 64
/* Resources one listen stream may follow, and the longest uri. */
#define MODERN_MAX_SUBS 64
#define MODERN_MAX_URI 2048

struct modern_req;

/* A principal's hidden session in one space. */
struct modern_space {
	struct modern_space *next, **pprev;
	struct modern *m;
	char *principal;
	char *space;		      /* NULL: none */
	char sid[SESSION_ID_LEN + 1]; /* "" until made, or after it ended */
	json_t *init;		      /* the result of its initialize */
	char *server_info;	      /* its serverInfo as text, or NULL */
	/* A tool's inputSchema found to mark no argument with x-mcp-header
	 * (held), or NULL: a call of that tool skips the walk (front.c). */
	json_t *plain_schema;
	struct hub_init *hi;	    /* the session being made */
	struct modern_req *waiting; /* requests waiting for it */
	struct exchange *fan;	    /* its standing stream: listeners */
	struct modern_req *listeners;
	unsigned nlisteners;
	uint64_t used_ms;
};

enum mreq_state {
	MREQ_WAIT,   /* for its hidden session */
	MREQ_RUN,    /* forwarded; its answer is awaited */
	MREQ_SETTLE, /* a server asked: input_required (or a refusal) soon */
	MREQ_PARKED, /* input_required answered: waiting for the retry */
	MREQ_TURN,   /* retried: its answers wait for its server's turn */
	MREQ_LISTEN, /* a subscriptions/listen stream */
	MREQ_DONE,
};

/* Listen kinds. */
#define LISTEN_TOOLS 1u
#define LISTEN_PROMPTS 2u
#define LISTEN_RESOURCES 4u

struct modern_req {
	struct modern_req *next, *prev; /* m->reqs */
	struct modern *m;
	struct modern_space *sp; /* NULL once its space record went */
	enum mreq_state state;
	int depth; /* inside a call that may end it: freed after */
	bool ended;
	json_t *msg; /* the first request, as sent (reference) */
	/* A call that came as text: the request until it is parsed (into
	 * msg and caps), which only a call that needs more than its answer
	 * stamped is (front.c). It lies in r's own allocation, after r. */
	char *text;
	size_t text_len;
	const char *method; /* a literal, or msg's own */
	json_t *client_id;  /* the id of the HTTP request answered now */
	json_t *caps;	    /* what that request declared */
	enum envelope_log log_level;
	json_t *inner_id; /* the id the session knows it by */
	struct exchange *ex;
	char sid[SESSION_ID_LEN + 1];
	const struct modern_sink_ops *ops; /* NULL: no HTTP side */
	void *ctx;
	bool streaming; /* the SSE head went out */
	/* The text the session delivers next is r's answer, stamped by
	 * front_answer_text while the session made it. */
	bool stamped;
	uint64_t deadline_ms; /* SETTLE: the round closes; PARKED: expiry */
	/* The bridge: the server's requests waiting for the client, by key:
	 * {"id": the session's id for it, "method", "params"}; NULL until
	 * the server first asks. */
	json_t *pending;
	unsigned next_key;
	unsigned rounds;
	const char *refuse_cap; /* SETTLE: a capability the client lacks */
	char handle[REQSTATE_HANDLE_LEN];
	char principal[MODERN_PRINCIPAL_MAX];
	unsigned char digest[32];
	json_t *held; /* the answer that came while parked */
	/* TURN: the retry's inputResponses, and whether the session still
	 * holds r for the turn (session_turn_wait); deadline_ms is now once
	 * the turn is r's, UINT64_MAX before. */
	json_t *answers;
	bool turn_wait;
	json_t *param_headers; /* Mcp-Param-* by lower-case name */
	/* Listen: kinds asked, and the next listener of its space. */
	unsigned kinds;
	json_t *subs; /* the resource uris it listens to (array) */
	bool listening;
	struct modern_req *next_listener;
	struct modern_req *next_wait;
};

struct modern {
	uv_loop_t *loop;
	struct hub *hub;
	struct reqstate *rs;
	struct modern_space *spaces;
	unsigned nspaces;
	struct modern_req reqs; /* list head */
	uv_timer_t timer;	/* settles rounds, expires parked calls */
	bool timer_open;
	size_t nparked, nlisteners;
	int64_t next_inner;
};

/* front.c */
struct session *mreq_session(struct modern_req *r);
/* Sends out (taken) to r's client: final ends the answer. A final
 * message while r has no HTTP side is kept (parked: for the retry). */
void mreq_send(struct modern_req *r, json_t *out, bool final);
/* Answers r's client with a JSON-RPC error (final). */
void mreq_fail(struct modern_req *r, int code, const char *message,
	       json_t *data);
/* Keeps r alive across a call that may end it; unhold frees it when it
 * ended meanwhile (true then: r is gone). */
void mreq_hold(struct modern_req *r);
bool mreq_unhold(struct modern_req *r);
/* r is over: its call, if still running, is cancelled upstream. */
void mreq_end(struct modern_req *r);
/* Sets the timer for the nearest deadline of any request. */
void modern_arm(struct modern *m);

/* stamp.c */
/* The session's answer (msg borrowed) as r's client sees it: its own id
 * and the revision's fields. A new message. */
json_t *stamp_answer(struct modern_req *r, json_t *msg);
/* The same for an answer that came as text (len bytes): a new text
 * (*out_len bytes), or NULL when it is not of the simple form the text
 * path takes (the caller parses it then). */
char *stamp_answer_text(struct modern_req *r, const char *data, size_t len,
			size_t *out_len);
/* The same for an answer whose one scan found its result's members
 * where a says (offsets in msg, the whole answer): the client's id goes
 * in where the session's was, in the same splice. */
char *stamp_answer_scanned(struct modern_req *r, const char *msg,
			   const struct instance_answer *a, size_t *out_len);

/* bridge.c */
/* A server's request (msg borrowed) for r's client. */
void bridge_server_request(struct modern_req *r, json_t *msg);
/* The server withdrew one of its requests (notifications/cancelled). */
void bridge_server_cancel(struct modern_req *r, json_t *msg);
/* r's deadline came: close the round (input_required, or a refusal), or
 * end a parked call nobody came back for. */
void bridge_deadline(struct modern_req *r);
/* A request carrying requestState: the retry of a parked call. Answers
 * the sink itself; NULL when done. */
struct modern_req *bridge_retry(struct modern *m, json_t *msg,
				const struct envelope *env,
				const char *principal,
				const struct modern_sink_ops *ops, void *ctx);

/* listen.c */
/* A subscriptions/listen on sp's session s: NULL when answered. */
struct modern_req *listen_start(struct modern_space *sp, struct session *s,
				struct modern_req *r);
/* r (a listener) goes. */
void listen_drop(struct modern_req *r);
/* sp's session ended: its listeners are told and end. */
void listen_space_gone(struct modern_space *sp);

#endif
