/*
 * One connection to one MCP server, whatever carries it: a stdio child, a
 * remote Streamable HTTP (or legacy HTTP+SSE) server, a local program
 * serving HTTP on a loopback port mcpvisor owns, a container (stdio or
 * HTTP on a published loopback port).
 * The instance holds a `const struct upstream_ops *` and a `struct
 * upstream *` and never learns which kind it has.
 *
 * A transport decides no policy: it reports facts (a message and the
 * request whose stream carried it, what is known of a request whose
 * answer will not come, as an outbox_fact with its id, a typed fault,
 * owned resources appearing and going). The instance decides what they
 * mean: backoff, needs_auth, re-initialize at once on an expired session,
 * a new port after a lost one, tools kept on a drop; and the outbox's rule
 * decides every re-send (at most once).
 *
 * The order of callbacks, for every kind:
 *
 *   when                      what may come                      never
 *   ------------------------  ---------------------------------  ---------
 *   inside open               on_owned(live) of what it started  the rest
 *   inside send, forget,      nothing                            anything
 *     pause, stop
 *   open .. on_fault/stop     on_message, on_garbage,            on_closed
 *                             on_overlong, on_lost, on_drain,
 *                             on_log, on_owned
 *   on_fault                  at most once; it ends the connection: what the
 *                             transport knew of requests is in its facts,
 *                             and no on_lost or on_drain follows (the
 *                             instance lets go of the link at once, so
 *                             whatever else comes is ignored)
 *   after on_fault or stop    on_log (a dying program's last lines),
 *                             on_owned(!live) as things are proven gone
 *   on_closed                 exactly once, last, after stop or on_fault,
 *                             once everything owned is gone (or given up
 *                             on: kept); the upstream is freed when it
 *                             returns
 *
 * on_owned for one thing: live before !live; a container is reported
 * live by its name first, then with its id, then !live once.
 */
#ifndef MCPV_TRANSPORT_UPSTREAM_H
#define MCPV_TRANSPORT_UPSTREAM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "config/config.h"
#include "jsonrpc/outbox.h"

/* The largest message any transport passes on (a stdio line, an HTTP
 * body or SSE event): over it, on_overlong. */
#define UPSTREAM_MAX_MESSAGE (16 * 1024 * 1024)

struct upstream; /* opaque, owned by its transport */
struct httpc;	 /* http/httpc.h */

enum upstream_fault_kind {
	UPSTREAM_EXITED,    /* its process exited (exit_status, term_signal) */
	UPSTREAM_CLOSED,    /* output closed; refused, reset, unreachable */
	UPSTREAM_TIMEOUT,   /* a deadline of the transport passed */
	UPSTREAM_AUTH,	    /* HTTP 401 or 403: needs credentials */
	UPSTREAM_EXPIRED,   /* HTTP 404 on our session id: the server
			       dropped the session */
	UPSTREAM_LOST_PORT, /* a local server could not keep its port
			       (EADDRINUSE, or another program answers
			       there): start again on a new one */
	UPSTREAM_PROTOCOL,  /* what came cannot be MCP (not JSON-RPC, wrong
			       content type, a legacy server without an
			       endpoint event) */
};

struct upstream_fault {
	enum upstream_fault_kind kind;
	int64_t exit_status; /* EXITED; -1 when unknown */
	int term_signal;     /* EXITED; 0 when none */
	int http_status;     /* AUTH, EXPIRED, PROTOCOL; 0 when none */
	/* One sentence for status and the host (secrets masked by the
	 * transport); borrowed. */
	const char *text;
	/* AUTH: the resource_metadata URL of the WWW-Authenticate
	 * challenge, NULL when none; borrowed. */
	const char *resource_metadata;
	/* AUTH: the WWW-Authenticate header as it came (NULL: none), and
	 * the Authorization value from spec.authorization that the refused
	 * request carried (NULL: none; a secret, to compare with the token
	 * held, never to log or keep). Borrowed. */
	const char *www_authenticate;
	const char *auth_sent;
	/* What is known of requests the transport had not settled, by the
	 * ids given to send: a POST the server refused unprocessed (a 404
	 * for the session, a 401 or 403: OUTBOX_REFUSED), messages held and
	 * never sent (OUTBOX_UNWRITTEN). Every other request written and not
	 * answered may have reached the server. Borrowed. */
	const struct outbox_fact_of *facts;
	size_t nfacts;
};

enum upstream_owned_kind {
	UPSTREAM_OWNED_PROCESS,
	UPSTREAM_OWNED_CONTAINER,
};

/* Something the runtime started and must stop (or find after a crash):
 * what the journal records. */
struct upstream_owned {
	enum upstream_owned_kind kind;
	const char *token; /* owner token (environment or label) */
	/* PROCESS */
	pid_t pid;
	pid_t pgid;
	uint64_t start_time; /* /proc/PID/stat field 22 */
	int port;	     /* loopback port it serves on, 0: none */
	/* CONTAINER */
	const char *engine; /* "podman", "docker" (path as run) */
	const char *container_id;
	const char *container_name;
	/* With !live: not confirmed gone, given up on (its engine could
	 * not remove it): the journal keeps it for the next start. */
	bool kept;
};

struct upstream_cbs {
	/* One JSON-RPC message from the server (not NUL-terminated).
	 * related: the id (as given to send) of the request whose answer
	 * stream carried it, 0 when the transport cannot tell (stdio, the
	 * HTTP GET stream). */
	void (*on_message)(void *ctx, const char *msg, size_t len,
			   int64_t related);
	/* Something came that is not a message (invalid UTF-8, not JSON).
	 * The connection goes on. */
	void (*on_garbage)(void *ctx, const char *what);
	/* A message over the size limit ended: its first and last bytes,
	 * so the request it answered can be failed. */
	void (*on_overlong)(void *ctx, const char *head, size_t head_len,
			    const char *tail, size_t tail_len);
	/* The answer to request id will not come; f says what is known of
	 * it (never OUTBOX_ENDING). The connection goes on. */
	void (*on_lost)(void *ctx, int64_t id, enum outbox_fact f);
	/* send may be called again after it returned -ENOBUFS. */
	void (*on_drain)(void *ctx);
	/* A line the server's program printed (stderr; a local HTTP
	 * server's stdout too), as it came, not NUL-terminated. */
	void (*on_log)(void *ctx, const char *line, size_t len);
	/* The connection is unusable. Once; on_closed follows (after
	 * whatever stop the transport runs on its own). */
	void (*on_fault)(void *ctx, const struct upstream_fault *f);
	/* Something we own appeared (live) or is provably gone (!live; or
	 * given up on: o->kept). A
	 * container is reported live by its name first (before the engine
	 * makes it), then again with its id: the same one, once !live. */
	void (*on_owned)(void *ctx, const struct upstream_owned *o, bool live);
	/* After stop (or after on_fault) once everything is closed and
	 * everything owned is gone or killed; the upstream is freed right
	 * after this returns. Once. */
	void (*on_closed)(void *ctx);
};

struct upstream_spec {
	const struct server_config *server; /* borrowed for open only */
	const char *cwd; /* resolved by scope; NULL: inherit */
	/* Owner token, already on disk in the journal: in the environment
	 * of every process (PROC_OWNER_ENV), or a container's label. */
	const char *token;
	struct httpc *http;	     /* the loop's HTTP client (http kinds) */
	uint64_t startup_timeout_ms; /* local HTTP: how long to wait for
					the port to answer */
	uint64_t stop_grace_ms;	     /* 0: the transport's default */
	/* The instance's public key (secrets fingerprinted): a container's
	 * mcpvisor.key label is its hash. May be NULL. */
	const char *key;
	/* HTTP kinds: the Authorization value for each request, NULL when
	 * none (mcpc_opts.authorization): the token the runtime holds for
	 * the server, read anew at every request so a refresh needs no new
	 * session. auth_arg outlives the upstream (until on_closed). NULL:
	 * only the configured headers. */
	const char *(*authorization)(void *arg);
	void *auth_arg;
	/* Whether the server's MCP revision is found out at the initialize
	 * (a 2026-07-28 server is then spoken to in its revision); false: it
	 * is known to speak a 2025 one. HTTP probes with server/discover; a
	 * process gets the initialize first and server/discover only after
	 * its error, unless era_modern. */
	bool probe_era;
	/* The server is known to speak 2026-07-28 (the tool cache said so):
	 * a process is sent server/discover first. */
	bool era_modern;
	/* The resources the instance's clients subscribed to (uri -> count,
	 * NULL: none), borrowed for open only: a 2026-07-28 server's listen
	 * stream opens with them (the revision has no resources/subscribe
	 * to send again after a restart). */
	const json_t *subs;
};

/* What a transport can tell, for the instance's choices. */
#define UPSTREAM_RELATES 0x1 /* on_message names the related request */
/* It may report a request unwritten or refused after send returned 0
 * (HTTP: a POST that never left, a 404 for an expired session): the
 * instance keeps such a request's message to write it again. */
#define UPSTREAM_LATE_FACTS 0x8
#define UPSTREAM_OWNS 0x2 /* it runs something (on_owned) */
#define UPSTREAM_HTTP 0x4 /* it needs spec.http (the loop's client) */

struct upstream_ops {
	const char *kind; /* "stdio", "http", "sse", "http-local", ... */
	unsigned caps;	  /* UPSTREAM_* */
	/* Starts connecting (or spawning). 0, or -errno with nothing left
	 * running and no callback to come (-ENOENT: no such command). */
	int (*open)(uv_loop_t *loop, const struct upstream_spec *spec,
		    const struct upstream_cbs *cbs, void *ctx,
		    struct upstream **out);
	/* One message (copied). id > 0 for a request (its answer stream is
	 * tied to it), 0 for a notification or an answer. 0; -ENOBUFS: its
	 * queue is full (wait for on_drain); -EPIPE: gone or stopping. */
	int (*send)(struct upstream *u, const char *msg, size_t len,
		    int64_t id);
	/* Request id was cancelled: stop waiting for its answer (no
	 * on_lost for it). May be NULL. */
	void (*forget)(struct upstream *u, int64_t id);
	/* Stops reading the server's output (on) or resumes. May be NULL. */
	void (*pause)(struct upstream *u, bool on);
	/* Stop ladder, DELETE of the session, engine stop: on_closed
	 * follows. Idempotent; allowed after on_fault. */
	void (*stop)(struct upstream *u);
	/* What status shows, new object: "transport", and per kind "pid",
	 * "port", "url" (secrets masked), "sessionId" (verbose only,
	 * fingerprinted), "protocol" ("streamable-http", "sse"),
	 * "container"... */
	json_t *(*describe)(const struct upstream *u, bool verbose);
	/* The last n lines the server printed, joined with '\n' (caller
	 * frees); "" when none. May be NULL. */
	char *(*log_tail)(const struct upstream *u, int n);
};

extern const struct upstream_ops upstream_stdio;      /* transport/up_stdio.c */
extern const struct upstream_ops upstream_http;	      /* transport/up_http.c */
extern const struct upstream_ops upstream_http_local; /* transport/up_local.c */
/* Container servers: transport/up_container.c. The stdio form, and the
 * HTTP form (a port published on loopback). */
extern const struct upstream_ops upstream_container;
extern const struct upstream_ops upstream_container_http;

/* The transport for a server: by kind (and, for url servers, its type). */
const struct upstream_ops *upstream_ops_for(const struct server_config *s);

#endif
