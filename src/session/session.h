/*
 * One client session: its id, protocol version, space and capabilities,
 * the calls it has in flight on instances (with their id and progress
 * token maps), the requests servers sent it, and its standing GET stream.
 * MCP methods are dispatched here; names are resolved through the router.
 */
#ifndef MCPV_SESSION_H
#define MCPV_SESSION_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "instance/instance.h"
#include "session/exchange.h"

#define SESSION_ID_LEN 32
/* A space's own servers, added to or overriding the global ones. */
#define SESSION_SPACE_CONFIG ".mcp.json"
/* What a client that reconnects with Last-Event-ID can get back. */
#define SESSION_RING_EVENTS 256
#define SESSION_RING_BYTES (512 * 1024)
#define SESSION_MAX_STREAMS 64
/* What the request records of ended streams may hold (their ids), so a
 * client resuming one late is told of answers it can no longer get. */
#define SESSION_REQ_BYTES (64 * 1024)
/* How long a stream closed on purpose waits for its client to resume. */
#define SESSION_PARK_MS (60 * 1000)

struct hub;
struct session;
struct trust_space;

/* space_ts: its space's .mcp.json as read off the loop (spaces.h), or
 * NULL without a space. */
struct session *session_new(struct hub *hub, const char *space,
			    struct trust_space *space_ts, json_t *init_params);
/* Resolves the session's servers again (config reloaded) from the space
 * file it last read. True when the servers it resolves changed. */
bool session_reconfigure(struct session *s);
/* The same with its space's file read anew (kept referenced). */
bool session_set_space(struct session *s, struct trust_space *ts);
/* The servers the session resolves, in order (borrowed). */
const struct server_config *const *session_servers(const struct session *s,
						   size_t *n);
/* Cancels the session's calls upstream and frees it. */
void session_free(struct session *s);

const char *session_id(const struct session *s);
const char *session_space(const struct session *s);
const char *session_protocol_version(const struct session *s);
/* Whether the client declared capability cap (sampling, roots...). */
bool session_client_has(const struct session *s, const char *cap);
uint64_t session_last_seen(const struct session *s);

/* Handles one message from the client (borrowed). Requests are answered
 * into ex; notifications and responses need no ex. */
void session_handle(struct session *s, json_t *msg, struct exchange *ex);
/* The server's successful answer to a text call (msg, the whole
 * message, and what its one scan found) as the call's client gets it: a
 * new text (*len bytes), or NULL for the session's own form (the
 * client's id in place of the server's, the result as it came). */
typedef char *(*session_answer_fn)(void *arg, const char *msg,
				   const struct instance_answer *a,
				   size_t *len);

/* A tools/call that came as text, routed without a parse: only when its
 * tool's plain name is known and nothing but the name needs rewriting. */
struct session_text_route {
	const struct server_config *srv;
	char *tool;	  /* the name asked for (owned) */
	const char *orig; /* the name the server knows, inside tool */
	json_t *item;	  /* its item in that server's known tools (borrowed) */
	/* NULL (session_route_text's), or set before phase two: the answer
	 * is shaped by answer(answer_arg, ...), called only while the
	 * call's exchange is attached (its HTTP side, which arg is, is
	 * there). */
	session_answer_fn answer;
	void *answer_arg;
};
/* Phase one: whether the text path can take name; fills rt. */
bool session_route_text(struct session *s, const char *name, size_t name_len,
			struct session_text_route *rt);
/* The inputSchema of the tool rt routes to, as its server's known list
 * gives it (borrowed: valid while that list is), or NULL. What
 * session_tool_schema finds, without routing the name again. */
json_t *session_route_schema(const struct session_text_route *rt);
/* Phase two: forwards the call (params: the request's params object as
 * text, the name's value at name_off, name_span bytes). Takes rt's tool;
 * id is borrowed. */
void session_call_text(struct session *s, struct session_text_route *rt,
		       json_t *id, const char *params, size_t params_len,
		       size_t name_off, size_t name_span, struct exchange *ex);
/* The client stopped listening on ex: its calls are cancelled upstream. */
void session_exchange_gone(struct session *s, struct exchange *ex);

/* s's own calls take turns on a server that asks mid-call without naming
 * the call (stdio), as calls of different sessions do: for a client to
 * whom a question is one call's answer (a 2026-07-28 principal's hidden
 * session, where it becomes that call's input_required), not a request
 * it answers by id whichever call it came on. */
void session_keep_calls_apart(struct session *s);
/* ex's call waits for its client's answers to what its server asked (on:
 * a 2026-07-28 client answered input_required) or not any more. A call
 * that waits does not hold its server's turn: the next call may go. */
void session_call_waits_client(struct session *s, struct exchange *ex, bool on);
/* ex's call, waiting for its client, has the answers now and would go
 * on. false: go on now (it holds its server's turn again). true: another
 * call is on that server, so the answers wait; go(arg) is called, from a
 * later loop turn's work, once the turn is this call's (it holds it from
 * then), unless session_turn_unwait(s, ex) first or the call ends. */
bool session_turn_wait(struct session *s, struct exchange *ex,
		       void (*go)(void *arg), void *arg);
void session_turn_unwait(struct session *s, struct exchange *ex);

/* The standing GET stream (NULL to clear); the old one is detached. */
void session_set_stream(struct session *s, struct exchange *ex);
/* Clears the standing stream if it is still ex. */
void session_drop_stream(struct session *s, struct exchange *ex);
bool session_has_stream(const struct session *s);
/* Sends msg (borrowed) on the standing stream, if any. */
void session_notify(struct session *s, json_t *msg);
/* Numbers and keeps every message of ex from now on, so a client can
 * resume it. Returns the stream number. */
uint64_t session_stream_open(struct session *s, struct exchange *ex);
/* The priming event of ex's stream: an id (written to id,
 * EXCHANGE_EVENT_ID_MAX bytes) and no data. Event ids are "S-N", the
 * stream and the event's number in the session. */
void session_stream_prime(struct session *s, struct exchange *ex, char *id);
/* ex's HTTP side was closed on purpose (the client will come back with
 * Last-Event-ID): its calls keep running for SESSION_PARK_MS. */
void session_stream_park(struct session *s, struct exchange *ex);
/* Resuming after last_event_id: *events gets the events to replay (array
 * of {"id","data"}; "id" absent for an event of no number), *ex the
 * exchange that goes on (a reference; NULL when that stream has ended).
 * A request of the stream whose answer came after last_event_id but is no
 * longer kept (the ring let it go, or never held it whole), or that an
 * ended stream never answered, gets an error answer in its place, so the
 * client never waits for it. -ENOENT when the id is not known any more,
 * -EBUSY when another connection still holds that stream. */
int session_stream_resume(struct session *s, const char *last_event_id,
			  struct exchange **ex, json_t **events);
/* Cancels calls of streams parked for too long. */
void session_sweep(struct session *s, uint64_t now_ms);

/* Whether the session's scope resolves server name to inst. */
bool session_uses(struct session *s, struct instance *inst);

struct call;
/* A server's progress notification (msg borrowed) for call c, whose
 * token the hub found: sent to the client under the client's own token.
 * Ignored unless it came from c's instance. */
void session_call_progress(struct call *c, struct instance *inst, json_t *msg);
/* Whether the session has a request in flight or holds a lease (a list
 * gather under way): it is not idle, whatever its last request's age. */
bool session_busy(const struct session *s);
/* Its idle time starts again at now. */
void session_touch(struct session *s, uint64_t now_ms);
/* Whether inst is this session's own (a session-scoped instance, or a
 * space one of a session without a space): its requests without a cause
 * can only be for this session. */
bool session_owns(const struct session *s, struct instance *inst);
/* Whether inst's server may be shown this session's roots: not an app
 * server, which is everyone's and has no roots. */
bool session_roots_for(const struct session *s, struct instance *inst);
/* Over stdio a server's request carries no link to the call that caused
 * it: the likeliest cause is a call on inst that does not wait for its
 * client (exchange_waits_client), then the one asked least so far, then
 * the oldest (each call that asks its client once, in order, is matched
 * exactly). Gives that call's rank (waits, asked, order); false when the
 * session has no call on inst. */
bool session_cause_rank(struct session *s, struct instance *inst, bool *waits,
			unsigned *asked, uint64_t *order);
/* A notification from inst's server for the client: on the stream of the
 * session's newest call on inst, else on the standing stream. */
void session_route_related(struct session *s, struct instance *inst,
			   json_t *msg);
/* A notification from c's server for c's client alone (its transport
 * said c's answer stream carried it): on c's stream, else the session's
 * standing stream. */
void session_call_related(struct call *c, json_t *msg);
/* A request from inst's server for the client (sampling, elicitation,
 * roots/list), sent on the stream of the call that caused it, else on the
 * standing stream. cause: that call, known (its transport said); NULL and
 * guess: the likeliest call of the session (stdio); NULL and !guess: no
 * call caused it. False when no stream is open (nothing was sent). */
bool session_forward_server_request(struct session *s, struct instance *inst,
				    json_t *msg, struct call *cause,
				    bool guess);
/* The inputSchema of the tool the session knows as name (borrowed, good
 * until its server's lists change), or NULL when no running server has
 * it. */
json_t *session_tool_schema(struct session *s, const char *name);
/* The id the server gave its request that the client knows as client_id
 * (borrowed), or NULL when no such request waits. */
json_t *session_server_request_id(struct session *s, const char *client_id);
/* The server cancels a request it sent this session's client: the id is
 * mapped back. True when it was this session's. */
bool session_route_server_cancel(struct session *s, struct instance *inst,
				 json_t *msg);
struct buf;
/* Appends a description of this session's calls in flight on server name
 * ("demo__sleep (session ab12cd34, 2.1 s)"; ", "-separated) to b. */
void session_describe_calls(struct session *s, const char *name, struct buf *b);
/* The session's servers changed: the client is told that every list it
 * has seen changed (servers added by a reload have no lists to compare
 * yet). */
void session_lists_reset(struct session *s);
/* Takes what the client would see now as seen, for each list not seen
 * yet, so the next change of any of them is told (a client that
 * subscribes without listing first). */
void session_lists_prime(struct session *s);
/* inst's lists changed (NULL: maybe any): tell the client if what it sees
 * changed. */
void session_lists_changed(struct session *s, struct instance *inst);
/* The instructions for the client: the runtime's line, then each server's
 * own, prefixed by its name (known from a running instance or the tool
 * cache; nothing is started for them). Caller frees. */
char *session_instructions(struct session *s);

#endif
