/*
 * Inside the instance room: the structure its files share and their
 * internal functions. Not for use outside src/instance/.
 */
#ifndef MCPV_INSTANCE_INT_H
#define MCPV_INSTANCE_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "instance/backoff.h"
#include "instance/instance.h"
#include "instance/listindex.h"
#include "journal/journal.h"
#include "jsonrpc/outbox.h"
#include "transport/upstream.h"
#include "util/buf.h"
#include "util/ratelimit.h"

#define INSTANCE_STDERR_TAIL 10
/* The lists' "era" (and the tool cache's) of a server known to speak a
 * 2025 revision. */
#define INSTANCE_ERA_2025 "2025"
/* ... and of a process known to speak 2026-07-28 (its next start sends
 * server/discover first). */
#define INSTANCE_ERA_MODERN "2026-07-28"

struct secrets;

/* After a fault that re-opens at once (EXPIRED, LOST_PORT), how many in a
 * row are allowed: a server that drops every session it makes, or a
 * program that never keeps a port, must not loop us. */
#define INSTANCE_MAX_EXPIRIES 3		/* the 3rd in a row fails */
#define INSTANCE_EXPIRY_WINDOW_MS 10000 /* ...when within this long */
#define INSTANCE_MAX_LOST_PORTS 3	/* re-starts on a new port */
/* A 401 answered by opening again with a refreshed (or newer) token:
 * at most this many in a row within the window, then needs_auth. */
#define INSTANCE_MAX_AUTH_REOPENS 3
#define INSTANCE_AUTH_REOPEN_WINDOW_MS 10000
/* Refreshes ahead of expiry are at least this far apart (a token that
 * lives less than a minute would otherwise be refreshed without end;
 * a 401 refreshes it when it runs out), and one that failed on the way
 * is tried again after this long. */
#define INSTANCE_SIGNIN_MIN_MS 10000
#define INSTANCE_SIGNIN_RETRY_MS 30000

/* The distinct resource uris remembered to follow again after a restart
 * (subs.c): past it a subscription still goes to the server, but a
 * restart forgets it. */
#define INSTANCE_MAX_SUBS 1024

/* What a server's noise may put in the log: the warnings about what it
 * sends (invalid messages, answers to nothing) and its stderr lines, each
 * at most a burst per window; the rest are counted and told in one line
 * when the window ends or its state changes. Lifecycle lines are never
 * held back. */
#define INSTANCE_WARN_BURST 10
#define INSTANCE_WARN_WINDOW_MS 60000
#define INSTANCE_STDERR_BURST 100
#define INSTANCE_STDERR_WINDOW_MS 10000

/* The transport's context: one per opened upstream, so that late
 * callbacks of a connection the instance already let go of are told
 * apart from the current one's (no-ops, except what it owned going, which
 * the journal must hear, and its close). */
struct instance_link {
	struct instance *inst;
	uint64_t gen;	   /* connection generation: 1, 2, ... per instance */
	bool detached;	   /* no longer the instance's connection */
	bool settles_stop; /* its on_closed ends a STOPPING state */
	bool stderr_seen;  /* some log line came (for the failure) */
};

/* What a refresh in flight is for (signin.c). */
enum instance_refresh {
	INSTANCE_REFRESH_NONE,
	INSTANCE_REFRESH_THEN_OPEN, /* a start waits for it (STARTING) */
	INSTANCE_REFRESH_AHEAD,	    /* ahead of expiry, while it runs */
};

struct instance_waiter {
	struct instance_waiter *next;
	instance_ready_cb cb;
	void *arg;
};

struct instance {
	uv_loop_t *loop;
	uint64_t serial; /* instance_serial */
	char *name;
	char *key;
	char *public_key;
	enum server_kind kind;
	/* Its own copy of the server's entry: what the transport opens
	 * (the config it came from may be reloaded and freed). */
	struct server_config server;
	char *cwd;
	char *client_caps_json;
	struct journal *journal; /* owner tokens; borrowed, may be NULL */
	uint64_t startup_timeout_ms;

	uint64_t tool_timeout_ms; /* 0: none */
	struct secrets *secrets;  /* masked in what the server prints */

	enum instance_state state;
	/* What carries it (NULL: no transport serves this kind yet) and
	 * the open connection, NULL when none. */
	const struct upstream_ops *ops;
	struct upstream *up;
	struct instance_link *link;	  /* of up */
	uint64_t gen;			  /* of the newest link */
	pid_t pid;			  /* from on_owned, 0 when none */
	struct httpc *(*http)(void *arg); /* the pool's lazy HTTP client */
	void *http_arg;
	uint64_t started_ms;
	unsigned starts; /* instance_start calls, for a count of restarts */
	/* Every request in flight, queued for a re-send or written. */
	struct outbox *outbox;
	/* Its output still queued on client connections (util/flow.h);
	 * reads_paused: the flow asked to stop reading the server. */
	struct flow *flow;
	bool reads_paused;
	struct buf scratch; /* the text path's message, reused */
	struct backoff backoff;
	bool lists_cached; /* lists came from the tool cache, not the server */
	bool lists_known;  /* lists came from a start or from the cache */
	struct instance_waiter *waiters;
	unsigned starting_lists; /* first lists still to come */
	/* Per list (catalog.c): the fetch in flight (every page of it),
	 * whether a list_changed came since it was sent (one more fetch
	 * follows), and why the last one failed (NULL: it did not). */
	struct instance_list_fetch *list_fetch[INSTANCE_NLISTS];
	bool list_again[INSTANCE_NLISTS];
	char *list_error[INSTANCE_NLISTS];
	/* The size of the server's message being handled (inbound.c), 0
	 * between messages: the list bounds count what the server sent. */
	size_t inbound_len;
	/* What the scan of the answer being given to a text callback found
	 * (inbound.c), NULL outside one. */
	const struct instance_answer *answer;
	/* Its noise in the log (failure.c): the two caps, and the timer
	 * that tells what they held back when their window ends. */
	struct ratelimit warn_limit;
	struct ratelimit stderr_limit;
	uv_timer_t noise_timer;
	bool restart_after_stop;
	/* Re-opens at once in a row (see INSTANCE_MAX_*): expiries since
	 * expiry_first_ms, new ports since the last ready. */
	unsigned expiries;
	uint64_t expiry_first_ms;
	unsigned lost_ports;
	/* NEEDS_AUTH: the HTTP status and the resource_metadata URL of the
	 * challenge (NULL: none), for status. */
	int auth_status;
	char *auth_metadata;
	/* Sign-in (signin.c): the owner's token access (NULL: none); the
	 * Authorization value last given to the transport (a secret); the
	 * refresh in flight and what it is for; the token a 401 refused,
	 * for the refresh that the next open waits for (a secret, NULL:
	 * refresh only if due); the timer of the refresh ahead of expiry;
	 * when the last refresh ended; and the 401s answered by opening
	 * again, in a row. */
	const struct instance_signin *signin;
	void *signin_arg;
	char *auth_value;
	struct auth_req *auth_req;
	enum instance_refresh refreshing;
	char *refused_value;
	uv_timer_t signin_timer;
	uint64_t signin_last_ms;
	uint64_t signin_retry_ms; /* after a refresh failed on the way */
	unsigned auth_reopens;
	uint64_t auth_reopen_first_ms;
	const char *stop_why; /* during instance_stop: why (borrowed) */

	/* Set only through instance_set_list, which keeps list_index[w]
	 * the index of lists[w]. */
	json_t *lists[INSTANCE_NLISTS];
	struct listindex list_index[INSTANCE_NLISTS];
	json_t *caps;
	char *instructions; /* from its initialize answer, or the cache */
	char *protocol_version;
	/* The resources its clients subscribed to (subs.c): uri -> how many
	 * subscribes (less unsubscribes) the server answered; NULL: none
	 * yet. Outlives each process; lent to each upstream it opens. */
	json_t *subs;
	/* The server answered an initialize with a 2025 revision (or the
	 * tool cache says it did, "era": INSTANCE_ERA_2025): the next opens
	 * do not probe for 2026-07-28 (until a start fails). */
	bool era_legacy;
	/* A process (stdio) answered the probe as a server of 2026-07-28
	 * (or the tool cache says it did): the next opens send it
	 * server/discover first (until a start fails). */
	bool era_modern;
	char *last_error;
	char *stderr_tail;
	/* The last failure, kept while the instance lives and handed to
	 * whoever asks (status after the instance is gone). */
	char *fail_reason;
	char *fail_stderr;
	uint64_t fail_at_ms; /* wall clock, ms since the epoch */
	char *fail_line;     /* a failed start's first stderr line */

	uv_timer_t startup_timer;
	uv_timer_t deadline_timer; /* the oldest toolTimeout in flight */
	bool freeing;
	unsigned handles_open;

	struct instance_cbs cbs;
	void *ctx;
	void *data;
};

extern const char *const instance_list_methods[INSTANCE_NLISTS];
extern const char *const instance_list_keys[INSTANCE_NLISTS];
extern const char *const instance_list_caps[INSTANCE_NLISTS];

/* instance.c: the state machine */
void instance_set_state(struct instance *inst, enum instance_state to,
			const char *why);
void instance_set_error(struct instance *inst, char *msg);
void instance_wake_waiters(struct instance *inst, int err);
void instance_drop_lists(struct instance *inst);
/* Makes list (a reference taken; NULL: none) the instance's list w, and
 * its index with it: the one place a list is replaced, so no index
 * outlives its list. */
void instance_set_list(struct instance *inst, enum instance_list w,
		       json_t *list);
/* The connection is unusable: go to to (FAILED or NEEDS_AUTH) with why
 * (taken). */
void instance_fail(struct instance *inst, enum instance_state to, char *why);
/* The same; give_up: nothing is kept for a re-send and it counts for the
 * backoff (a bound on re-opens was reached). */
void instance_fail_how(struct instance *inst, enum instance_state to, char *why,
		       bool give_up);
/* Frees it once instance_free was called and nothing is open. */
void instance_maybe_free(struct instance *inst);
void instance_start(struct instance *inst);
/* The start's second step: the transport opens and the handshake goes
 * (after a refresh the start waited for, if any). */
void instance_open(struct instance *inst);
/* Lets go of the current connection and starts its stop. */
void instance_detach_conn(struct instance *inst, bool settles_stop);

/* link.c: the upstream's callbacks and the policy for each fact */
/* The server dropped the session (or refused a token it may take anew)
 * but is not broken: the connection goes, what may be sent again waits,
 * and a new one opens at once, not counted for the backoff. */
void instance_reopen(struct instance *inst, const char *why);
extern const struct upstream_cbs instance_upstream_cbs;
/* Opens the upstream for a start; 0 or -errno (nothing runs then). */
int instance_open_upstream(struct instance *inst);
/* Replaces the transport (unit tests); before the first start. */
void instance_set_ops(struct instance *inst, const struct upstream_ops *ops);

/* signin.c: OAuth tokens on the wire, refresh ahead and on a 401 */
/* The Authorization value for the transport now, NULL when none (the
 * upstream's provider; arg is the instance). */
const char *instance_authorization_cb(void *arg);
/* A start's first step: true when a refresh runs first (due, or after a
 * 401); the open follows when it ends. */
bool instance_signin_before_open(struct instance *inst);
/* The server refused our credentials (f: a 401 or 403): true when a
 * refresh (or a newer token) is tried, on a new connection; false when
 * a sign-in is needed (needs_auth). */
bool instance_signin_fault(struct instance *inst,
			   const struct upstream_fault *f);
/* What needs_auth tells the user, for a refusal with status (0: none)
 * and the transport's text. Caller frees. */
char *instance_signin_needs_text(const struct instance *inst, int status,
				 const char *text);
/* After every state change: the refresh ahead of expiry is timed while
 * it runs, and stopped otherwise. */
void instance_signin_state(struct instance *inst);
/* The refresh the instance waits for, and its timer, let go (a stop). */
void instance_signin_stop(struct instance *inst);
/* Frees what sign-in holds (wiping secrets). */
void instance_signin_free(struct instance *inst);

/* failure.c: stderr, secrets masked, the last failure */
/* A copy of s (len bytes) with every configured secret value masked. */
char *instance_mask(const struct instance *inst, const char *s, size_t len);
/* The connection's log tail (stderr), masked (caller frees). */
char *instance_stderr_now(const struct instance *inst);
/* Keeps the tail in inst->stderr_tail before the connection goes. */
void instance_save_stderr(struct instance *inst);
/* The first line of tail, cut short; NULL when none. */
char *instance_first_line(const char *tail);
/* last_error and the stderr tail become the last failure, timed. */
void instance_record_failure(struct instance *inst);
/* A start went well: the server's last failure is history since. */
void instance_record_ready(const struct instance *inst);
/* The upstream's on_log: the line, masked, to the log (capped). */
void instance_stderr_cb(void *ctx, const char *line, size_t len);
/* A warning about what the server sent, "instance NAME: " first, within
 * the cap on its noise. */
void instance_warn(struct instance *inst, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Says what the caps held back so far (before a lifecycle line, at the
 * window's end, when the instance goes). */
void instance_noise_flush(struct instance *inst);

/* requests.c: ids, requests in flight, messages from the server */
/* Why requests are lost now: the failure, or why it is being stopped. */
const char *instance_lost_reason(const struct instance *inst);
json_t *instance_unavailable_error(struct instance *inst, bool sent);
/* The connection is lost: each request written on it is judged by the
 * outbox's rule as cut (reconnects: a next connection comes; queued
 * requests wait for it) or as ending (nothing comes: every request is
 * answered). */
void instance_fail_pending(struct instance *inst, bool reconnects);
/* Settles r as the rule's verdict v says (anything but a re-send). */
void instance_settle_lost(struct instance *inst, struct outbox_req *r,
			  enum outbox_verdict v);
/* The transport reported fact f of request r (the connection goes on):
 * the rule re-sends it or answers it. */
void instance_lose_request(struct instance *inst, struct outbox_req *r,
			   enum outbox_fact f);
/* Whether a request that was sent again after a drop is in flight. */
bool instance_resent_in_flight(const struct instance *inst);
void instance_fail_resend(struct instance *inst);
/* Whether requests wait for a re-send. */
bool instance_has_queued(const struct instance *inst);
int64_t instance_send_request(struct instance *inst, const char *method,
			      json_t *params, instance_reply_cb cb, void *arg,
			      bool internal);
void instance_resend(struct instance *inst);
/* Fails the requests whose toolTimeout passed (by the replaceable clock)
 * and re-arms the deadline timer for the next. */
void instance_expire(struct instance *inst);
void instance_message_cb(void *ctx, const char *line, size_t len,
			 int64_t related);
void instance_garbage_cb(void *ctx, const char *what);
void instance_overlong_cb(void *ctx, const char *head, size_t head_len,
			  const char *tail, size_t tail_len);

/* subs.c: resource subscriptions that outlive a process */
/* Request r was answered without an error: a client's resources/subscribe
 * or unsubscribe is counted. */
void instance_subs_answered(struct instance *inst, const struct outbox_req *r);
/* A start is ready: a 2025 server is sent resources/subscribe for each
 * uri followed (a 2026-07-28 server's listen stream already carries
 * them); logged. */
void instance_subs_restore(struct instance *inst);

/* catalog.c: the handshake and the lists */
void instance_init_reply_cb(void *arg, json_t *resp, bool sent);
/* The server said list w changed: fetched again, at most one fetch in
 * flight and one pending. */
void instance_list_refresh(struct instance *inst, enum instance_list w);

#endif
