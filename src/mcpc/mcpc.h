/*
 * One MCP client session to one server over HTTP: Streamable HTTP
 * (2025-03-26 onward) and the legacy HTTP+SSE transport (2024-11-05), on
 * the loop's HTTP client (http/httpc.h). It carries messages and reports
 * facts; it decides no policy. Used by the HTTP upstreams and the relay.
 *
 * Streamable HTTP: every message is a POST to the URL; the answer is
 * JSON or an SSE stream that carries the answer and any requests and
 * notifications the server sends while handling it (reported with the
 * request's id as `related`). The `initialize` answer's Mcp-Session-Id
 * goes on every later request, with MCP-Protocol-Version once the
 * version is known (read from the initialize result). After
 * notifications/initialized a GET stream is opened for what the server
 * sends unprompted (405: the server has none). A stream that ends before
 * its answer is resumed by GET with Last-Event-ID, after the server's
 * `retry` (or 1 s); when it cannot be, the request is lost (sent). Close
 * sends DELETE with the session id.
 *
 * Legacy: a GET opens the SSE stream; its `endpoint` event names the
 * POST URL; answers come on that stream (related 0).
 */
#ifndef MCPV_MCPC_MCPC_H
#define MCPV_MCPC_MCPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonrpc/outbox.h"

struct httpc;
struct mcpc;

#define MCPC_MAX_MESSAGE (16 * 1024 * 1024) /* one message, either way */
#define MCPC_RESUME_TRIES 3 /* Last-Event-ID attempts for one stream */
/* Messages sent and not yet answered with a response head (waiting for a
 * connection inside the HTTP client, being written, or a server that
 * holds its head until it is done), and their bytes: past either,
 * mcpc_send says -ENOBUFS until on_drain. */
#define MCPC_MAX_WAITING 256
#define MCPC_MAX_WAITING_BYTES (32 * 1024 * 1024)

enum mcpc_mode {
	MCPC_AUTO,	 /* Streamable HTTP; legacy when the first POST
			    answers 400, 404 or 405 */
	MCPC_STREAMABLE, /* Streamable HTTP only */
	MCPC_SSE,	 /* legacy HTTP+SSE only */
};

enum mcpc_fault {
	MCPC_FAULT_CLOSED,   /* refused, reset, unreachable, TLS failed */
	MCPC_FAULT_TIMEOUT,  /* connect or silence timeout */
	MCPC_FAULT_AUTH,     /* 401 or 403 */
	MCPC_FAULT_EXPIRED,  /* 404 on a request with our session id */
	MCPC_FAULT_PROTOCOL, /* not MCP: wrong content type, bad SSE, a
				legacy stream without an endpoint */
};

struct mcpc_opts {
	const char *url;
	/* "Name: value" lines from the config (secrets), NULL-terminated;
	 * copied. */
	const char *const *headers;
	const char *unix_socket; /* NULL: TCP */
	enum mcpc_mode mode;
	uint64_t connect_timeout_ms; /* 0: the client's default */
	/* The Authorization header's value ("Bearer ...") for each request
	 * as it starts, NULL for none: called for every request, so a token
	 * refreshed in the meantime goes on the next one without a new
	 * session. The value is the provider's (copied into the request,
	 * never logged). NULL: no provider. */
	const char *(*authorization)(void *arg);
	void *auth_arg;
	/* The peer answers 503 only to requests it did not process (the
	 * mcpvisor runtime while it drains): such a 503 is OUTBOX_REFUSED.
	 * From any other server a 503 proves nothing (a proxy says it when
	 * its backend died mid-request). */
	bool refuses_with_503;
};

/* The session is unusable: what, and what is known of the requests it
 * had not settled. */
struct mcpc_fault_info {
	enum mcpc_fault kind;
	int http_status;  /* 0 when none */
	const char *text; /* one sentence, no secrets */
	/* AUTH: the 401 challenge's resource_metadata URL, or NULL. */
	const char *resource_metadata;
	/* AUTH: the WWW-Authenticate header as it came, NULL when none;
	 * and the Authorization value the refused request carried from the
	 * provider, NULL when none (a secret: for the caller to compare with
	 * the token it holds, never to log or keep). */
	const char *www_authenticate;
	const char *auth_sent;
	/* The POST that met a 404 for the session, or a 401 or 403 (the
	 * server did not process it: OUTBOX_REFUSED), and the messages held
	 * and never sent (OUTBOX_UNWRITTEN), by the ids given to mcpc_send.
	 * Every other request not answered may have reached the server. */
	const struct outbox_fact_of *facts;
	size_t nfacts;
};

struct mcpc_cbs {
	/* One JSON-RPC message (not NUL-terminated); related: the id given
	 * to mcpc_send for the request whose stream carried it, 0 when it
	 * came on the GET stream (or any legacy stream). */
	void (*on_message)(void *ctx, const char *msg, size_t len,
			   int64_t related);
	/* The answer to request id will not come; f: what is known of it
	 * (UNWRITTEN, REFUSED or CUT). The session goes on. */
	void (*on_lost)(void *ctx, int64_t id, enum outbox_fact f);
	/* An SSE comment on any stream: the server (or the runtime, for the
	 * relay) is alive. May be NULL. */
	void (*on_heartbeat)(void *ctx);
	/* The session is unusable. Once; no on_lost follows for requests
	 * still pending (all of them are the caller's to settle, with the
	 * facts f carries). A refused or failed connection on the first
	 * request is this fault (CLOSED, or TIMEOUT); on later requests it
	 * is on_lost(id, OUTBOX_UNWRITTEN). All borrowed. */
	void (*on_fault)(void *ctx, const struct mcpc_fault_info *f);
	/* mcpc_send may be called again after it said -ENOBUFS. May be
	 * NULL. */
	void (*on_drain)(void *ctx);
};

/* 0 and *out, or -errno (-EINVAL: bad URL, too many headers).
 * Nothing is sent until the first mcpc_send (which should be
 * initialize) or mcpc_send_modern. No callback runs from inside mcpc_new,
 * mcpc_send, mcpc_forget or mcpc_close. */
int mcpc_new(struct httpc *http, const struct mcpc_opts *opts,
	     const struct mcpc_cbs *cbs, void *ctx, struct mcpc **out);
/* Sends one JSON-RPC message (copied). id > 0 for a request (the id in
 * the message, as the caller knows it), 0 for a notification or an
 * answer to the server. 0; -EPIPE once faulted or closing; -EMSGSIZE
 * past MCPC_MAX_MESSAGE; -ENOBUFS past MCPC_MAX_WAITING (wait for
 * on_drain); another -errno when the HTTP request could not be started
 * (nothing was sent). */
int mcpc_send(struct mcpc *m, const char *msg, size_t len, int64_t id);
/* Sends one message of MCP 2026-07-28 (its params._meta carries the
 * protocol-version claim): a POST of its own with no session id, with
 * MCP-Protocol-Version from the claim, Mcp-Method, and Mcp-Name for
 * tools/call, prompts/get and resources/read (envelope_header_encode),
 * never held for an initialize and never on a legacy HTTP+SSE session.
 * id as for mcpc_send. Its answer, and whatever comes on its stream, go
 * to on_message with related = id; an HTTP 4xx answer that carries a
 * JSON-RPC message is that message (the revision's errors come so), not a
 * fault. A 4xx without the answer (a server of an older revision that
 * cannot place the message) is on_lost(id, OUTBOX_REFUSED); a stream that
 * ends before its answer is not resumed (the revision has none): on_lost
 * (id, OUTBOX_CUT). 401 and 403 are faults as for mcpc_send. Dropping its
 * stream (mcpc_forget) is how it is cancelled. Same returns as mcpc_send,
 * and -EINVAL when msg has no params._meta protocol-version claim (a
 * token), -EPROTONOSUPPORT on a legacy HTTP+SSE session. */
int mcpc_send_modern(struct mcpc *m, const char *msg, size_t len, int64_t id);
/* The same with more header lines ("Name: value", or "Name;" for an empty
 * value; NULL-terminated, copied): the Mcp-Param-* headers of a
 * tools/call. -E2BIG when they do not fit beside the others. */
int mcpc_send_modern_with(struct mcpc *m, const char *msg, size_t len,
			  int64_t id, const char *const *extra);
/* Stops listening for request id's answer (its stream is dropped). */
void mcpc_forget(struct mcpc *m, int64_t id);
/* Stops (on) or resumes reading what the server sends, on every stream
 * (backpressure: what came is not passed on while paused). */
void mcpc_pause(struct mcpc *m, bool on);
/* Ends the session: DELETE when it has an id (bounded wait), streams
 * closed; done(arg) runs once everything is let go, then m is freed. No
 * other callback runs after this. */
void mcpc_close(struct mcpc *m, void (*done)(void *arg), void *arg);

/* For status: {"url" (masked by the caller's secrets), "protocol":
 * "streamable-http"|"sse", "protocolVersion", "sessionId" (verbose:
 * first 8 chars of its SHA-256)}; new reference. */
json_t *mcpc_describe(const struct mcpc *m, bool verbose);
/* Whether a session id was given (Streamable HTTP), for tests. */
bool mcpc_has_session(const struct mcpc *m);

#endif
