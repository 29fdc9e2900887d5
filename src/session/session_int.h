/*
 * Inside the session room: the structures its files share (a session, its
 * calls, streams and requests of servers) and their internal functions.
 * Not for use outside src/session/.
 */
#ifndef MCPV_SESSION_INT_H
#define MCPV_SESSION_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "instance/instance.h"
#include "jsonrpc/envelope.h"
#include "pool/pool.h"
#include "router/router.h"
#include "session/exchange.h"
#include "session/session.h"

/* A client request forwarded to one server. */
struct metrics_server;

struct call {
	struct call *next, *prev;
	struct session *session;
	struct exchange *ex; /* reference */
	json_t *client_id;
	const char *method; /* in the call's own allocation, as label is */
	json_t *params;	    /* to send, until the instance is ready */
	char *params_text;  /* or the same as JSON text (the text path) */
	size_t params_len;
	struct instance *inst;
	int64_t server_id;	/* 0 until sent */
	json_t *progress_token; /* the client's, or NULL */
	uint64_t token;		/* ours for it, sent to the server; 0: none */
	uint64_t seq;
	uint64_t order; /* across all sessions: which call came first */
	unsigned asked; /* requests of the server routed to this call */
	uint64_t started_ms;
	/* Its server's figures (metrics/), from hub_call_live to
	 * hub_call_gone: when it started, and whether it failed (the
	 * server's error, or ours when the server could not take or finish
	 * it; not a cancel or its session's end). */
	struct metrics_server *fig;
	uint64_t started_us;
	bool error;
	/* The name the client used, for status and refusals. */
	const char *label;
	/* resources/subscribe or unsubscribe: its uri, for the session's
	 * own count once answered (session/subs.c); else NULL. */
	char *sub_uri;
	/* Waiting for a sign-in through its client (signin.c), which holds
	 * the reference of the pending callback meanwhile; NULL: not. Once
	 * tried, a call never waits for a second one. */
	struct signin_wait *signin;
	bool signin_tried;
	bool done;
	bool leased; /* holds c->inst for the session */
	/* Waiting for its turn on a server that asks mid-call (calls.c),
	 * on hub->turns; the pending callback's reference stays with it. */
	bool waiting_turn;
	struct call *next_turn;
	/* Its client answered what its server asked, and the answers wait
	 * for the server's turn (session_turn_wait), on hub->resumes. */
	void (*resume_go)(void *arg);
	void *resume_arg;
	struct call *next_resume;
	int refs;
	/* A text call's answer shaper and its arg (session_text_route), or
	 * NULL. */
	session_answer_fn answer;
	void *answer_arg;
};

/* A request of a server for the client, waiting for the client's answer. */
struct upstream_req {
	struct upstream_req *next;
	char *client_id; /* the id the client sees */
	char *inst_key;
	uint64_t gen; /* the connection that asked (instance_conn_gen) */
	json_t *server_id;
	struct exchange *ex; /* where it was sent (reference), or NULL */
};

/* One event kept for replay. */
struct ring_ev {
	uint64_t id;
	uint64_t stream;
	char *data; /* serialized message; "" for a priming event */
	size_t len;
};

/* A numbered stream of the session. */
struct stream_rec {
	struct stream_rec *next;
	uint64_t no;
	struct exchange *ex; /* reference */
	uint64_t parked_ms;  /* 0: not parked */
	uint64_t last_id;    /* its newest event, 0: none yet */
	size_t cost;	     /* its exchange's request records (footprint) */
};

struct session {
	struct hub *hub;
	/* The servers this session resolves: the global config's, with its
	 * space's .mcp.json adding or overriding servers by name. */
	struct config *space_cfg;     /* NULL without a space file */
	struct trust_space *space_ts; /* what its .mcp.json read gave */
	const struct server_config **srv;
	char **keys; /* instance key of each server, computed once */
	size_t nsrv;
	int refs;	  /* the hub's, and one per gather under way */
	bool closed;	  /* ended; only references keep it */
	bool calls_apart; /* session_keep_calls_apart */
	char id[SESSION_ID_LEN + 1];
	char *space;
	char *protocol_version;
	json_t *client_caps;
	json_t *client_info;
	char *server_caps_json; /* what servers this session starts are told */
	uint64_t created_ms, last_seen_ms;
	struct call calls; /* list head */
	/* Requests routed to a server that wait for its start to be
	 * routed further (calls.c). */
	struct route_req *routing;
	uint64_t next_seq;
	uint64_t next_event_id;
	uint64_t next_stream;
	struct ring_ev *ring; /* SESSION_RING_EVENTS, made at the first event */
	size_t ring_head, ring_count, ring_bytes;
	struct stream_rec *streams;
	unsigned nstreams;
	size_t streams_cost;	 /* the cost of every stream record */
	struct exchange *stream; /* standing GET stream, reference */
	struct upstream_req *upstream;
	/* What the client's logging/setLevel asked (ENVELOPE_LOG_NONE:
	 * nothing): the session's own, since a 2026-07-28 server takes a
	 * level per request and its instance may serve other clients too
	 * (calls.c puts it on this session's requests). */
	enum envelope_log log_level;
	/* What the client was last shown, so list_changed is sent only when
	 * its view really changed. */
	json_t *seen[INSTANCE_NLISTS];
	/* The resources it follows (subs.c), given back when it ends. */
	struct session_sub *subs;
	unsigned nsubs;
};

/* The servers of a session, as it resolves them, with their instances
 * and router views, in config order. */
struct session_views {
	size_t n;
	const struct server_config **servers;
	struct instance **insts;
	struct router_view *v[INSTANCE_NLISTS];
};

typedef void (*session_gather_done)(struct session *s, void *arg);

/* The synthetic tools of deferred exposure. */
#define SESSION_FIND_TOOL "mcpvisor__find_tools"
#define SESSION_CALL_TOOL "mcpvisor__call_tool"
#define SESSION_FIND_LIMIT 10

/* session.c */
const struct server_config *session_server(const struct session *s,
					   const char *name);
/* The instance key of one of the session's servers. */
const char *session_key(const struct session *s,
			const struct server_config *srv);
bool session_has_deferred(const struct session *s);
void session_ref(struct session *s);
void session_unref(struct session *s);
void session_scope_ctx(const struct session *s, struct pool_scope_ctx *sc);
bool session_server_usable(const struct server_config *sv);
void session_reply(struct exchange *ex, json_t *id, json_t *result);
void session_reply_error(struct exchange *ex, json_t *id, int code,
			 const char *message, json_t *data);

/* subs.c: the resources a session follows through its instances */
/* Whether method is resources/subscribe or resources/unsubscribe. */
bool session_subs_method(const char *method);
/* inst answered the session's (un)subscribe of uri without an error. */
void session_subs_note(struct session *s, struct instance *inst,
		       const char *method, const char *uri);
/* The session ended: each instance that still counts a subscription of
 * its own is told so (instance_subs_leave). */
void session_subs_leave(struct session *s);
void session_subs_free(struct session *s);

/* streams.c */
void session_streams_destroy(struct session *s);
void session_streams_prune(struct session *s);

/* lists.c */
/* The filter of srv that applies to list which. */
const struct config_filter *session_filter_of(const struct server_config *srv,
					      enum instance_list which);
/* Whether a server's notification may reach s: an update of a resource
 * its filter drops does not (it would tell of the resource). */
bool session_notification_kept(struct session *s, struct instance *inst,
			       json_t *msg);
void session_views_build(struct session *s, struct session_views *sv);
void session_views_free(struct session_views *sv);
void session_gather(struct session *s, session_gather_done done, void *arg);
/* The same for one server (only), or every server when only is NULL. */
void session_gather_only(struct session *s, const struct server_config *only,
			 session_gather_done done, void *arg);
json_t *session_aggregate(struct session *s, enum instance_list which);
void session_list(struct session *s, json_t *id, json_t *params,
		  enum instance_list which, struct exchange *ex);

void session_find_deferred(struct session *s, json_t *id, json_t *args,
			   struct exchange *ex);

/* calls.c */
void session_route_request(struct session *s, json_t *id, const char *method,
			   json_t *params, enum instance_list which,
			   struct exchange *ex);
/* A method the runtime does not know, sent on to the server that owns
 * the tool, prompt or resource its params name (name or uri); false when
 * they name none (then it is -32601). */
bool session_pass_through(struct session *s, json_t *id, const char *method,
			  json_t *params, struct exchange *ex);
/* tools/call of a deferred tool through SESSION_CALL_TOOL. */
void session_call_deferred(struct session *s, json_t *id, json_t *args,
			   struct exchange *ex);
void session_complete(struct session *s, json_t *id, json_t *params,
		      struct exchange *ex);
void session_set_level(struct session *s, json_t *id, json_t *params,
		       struct exchange *ex);
/* Whether a server's log message msg may reach s's client: below the
 * level that client asked, it may not (a server shared with other
 * clients logs at the level of the one that asked most). */
bool session_log_wanted(const struct session *s, json_t *msg);
struct call *session_find_call(struct session *s, json_t *client_id);
void session_call_cancel(struct call *c, const char *reason);
/* Stops a call and answers it with an error that says why (and whether it
 * may have run). */
void session_call_abort(struct call *c, const char *why);
struct call *session_newest_call_on(struct session *s, struct instance *inst);
/* A call whose server needed a sign-in goes on: it waits for the start
 * of its instance (the pending callback's reference goes with it). */
void session_call_resume(struct call *c);
/* turns.c: c waits for its turn (true: queued, the ready callback's
 * reference with it) when its server asks and another call is on it. */
bool session_call_wait_turn(struct call *c, struct instance *inst);
/* The turn on inst may be free: the next in line goes. */
void session_turn_next(struct hub *hub, struct instance *inst);
/* c ends: out of both lines; true when it waited for its turn (the
 * caller drops the ready callback's reference). */
bool session_turn_leave(struct call *c);
/* A request routed by name or uri (route.c), on session->routing while
 * it waits for its server's start. */
struct route_req {
	struct exchange *ex;
	json_t *id;
	char *method;
	json_t *params;
	enum instance_list which;
	bool gathered;
	bool deferred;	  /* through SESSION_CALL_TOOL: deferred servers only */
	bool passthrough; /* a method the runtime does not know */
	uint64_t started_ms;
	/* Set while it waits for the start of the server it is routed to
	 * (to learn that server's lists): from the client's view a call in
	 * flight there already, which stop and restart must see. */
	char *server, *label;
	struct route_req *next_waiting; /* on session->routing */
};

/* Forwards a request to the server that owns it (route.c found it).
 * params is stolen (the routed copy). */
void session_call_start(struct session *s, json_t *id, const char *method,
			json_t *params, const struct server_config *srv,
			struct exchange *ex, char *params_text,
			size_t params_len, const char *label);
/* A call that has not reached its server is answered with text as its
 * error, and ends (the pending callback's reference goes). */
void session_call_fail(struct call *c, const char *text);

/* signin.c */
/* c's server needs a sign-in and c's client declared URL-mode
 * elicitation: true when c waits for one (its client is asked to open
 * the authorization URL; the call goes on once the tokens are stored),
 * holding the pending callback's reference. */
bool session_call_signin(struct call *c);
/* c no longer waits for its sign-in (it ended); the reference it held
 * is the caller's to drop. */
void session_call_signin_drop(struct call *c);
/* A client's answer to one of our elicitations: true when msg was one
 * (a decline or cancel ends the call it was for). */
bool session_signin_response(struct session *s, json_t *msg);
/* The call on inst that most likely caused a request of its server: the
 * one asked least so far, then the oldest. NULL when none runs there. */
struct call *session_cause_on(struct session *s, struct instance *inst);

#endif
