/*
 * One instance: one running connection to one MCP server, its state
 * machine, its lists (tools, prompts, resources, templates), its requests in
 * flight and their id map. Every state change goes through one function and
 * is logged. Knows nothing of sessions, scopes or the HTTP endpoint: its
 * owner (the pool) decides when it starts, who holds it and when it closes.
 */
#ifndef MCPV_INSTANCE_H
#define MCPV_INSTANCE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "auth/auth.h"
#include "config/config.h"
#include "util/jsonscan.h"

/* Bounds on one of a server's lists, across all its pages: past any of
 * them the list fails (status says why) and offers nothing. */
#define INSTANCE_MAX_LIST_PAGES 100
#define INSTANCE_MAX_LIST_ITEMS 10000
#define INSTANCE_MAX_LIST_BYTES (16 * 1024 * 1024)
#define INSTANCE_MAX_INSTRUCTIONS (64 * 1024)

enum instance_state {
	INSTANCE_STOPPED,    /* not running: never started, or closed */
	INSTANCE_STARTING,   /* spawned; handshake and first lists under way */
	INSTANCE_READY,	     /* serving (shown as idle when nobody holds it) */
	INSTANCE_FAILED,     /* dropped on its own or failed to start */
	INSTANCE_NEEDS_AUTH, /* the server refused our credentials */
	INSTANCE_STOPPING,   /* stop ladder under way */
};

enum instance_list {
	INSTANCE_TOOLS,
	INSTANCE_PROMPTS,
	INSTANCE_RESOURCES,
	INSTANCE_TEMPLATES,
	INSTANCE_NLISTS,
};

struct instance;

struct upstream_owned; /* transport/upstream.h */
struct httpc;	       /* http/httpc.h */

struct instance_cbs {
	/* A notification from the server (progress, message, list_changed
	 * after the instance refreshed that list, resources/updated...).
	 * cause: the arg of the client request whose answer stream carried
	 * it (transports that can tell: HTTP), NULL when unknown (stdio). */
	void (*on_notification)(void *ctx, struct instance *inst, json_t *msg,
				void *cause);
	/* A request from the server that the instance does not answer itself
	 * (sampling, elicitation, roots/list). Answer with
	 * instance_respond_on. cause as for on_notification: when set, that
	 * call's session, and no other, is asked. */
	void (*on_request)(void *ctx, struct instance *inst, json_t *msg,
			   void *cause);
	/* After every state change. */
	void (*on_state)(void *ctx, struct instance *inst,
			 enum instance_state from, enum instance_state to);
	/* After one of the lists changed (fresh start or list_changed). */
	void (*on_lists)(void *ctx, struct instance *inst);
	/* Something the instance's transport runs appeared (live: a
	 * process with its pid, start time and owner token; a container)
	 * or is provably gone (!live). For the journal. */
	void (*on_owned)(void *ctx, struct instance *inst,
			 const struct upstream_owned *o, bool live);
};

/* How an instance of a url server signs in with the OAuth tokens its
 * owner holds: auth/auth.h's calls, through this table so that tests can
 * stand in for them. arg is instance_spec.signin_arg. Only a url server
 * whose config sets no Authorization header uses it (a configured header
 * wins). */
struct instance_signin {
	/* auth_bearer */
	int (*bearer)(void *arg, const char *name, const char *url,
		      char **value, int64_t *refresh_in_ms);
	/* auth_challenge */
	enum auth_verdict (*challenge)(void *arg, const char *name,
				       const char *url, int status,
				       const char *www_authenticate,
				       const char *sent);
	/* auth_refresh */
	int (*refresh)(void *arg, const char *name, const char *url,
		       const char *sent, auth_done_cb cb, void *cb_arg,
		       struct auth_req **out);
	/* auth_req_cancel */
	void (*cancel)(struct auth_req *r);
	/* auth_reload */
	int (*reload)(void *arg, const char *name, const char *url);
};

/* What the instance is made from: copied by instance_new. */
struct journal;

struct instance_spec {
	const struct server_config *server;
	const char *key; /* canonical instance key (may hold secrets) */
	/* The same with every secret a salted fingerprint: for status, logs
	 * and the journal. */
	const char *public_key;
	const char *cwd; /* resolved working directory, NULL: inherit */
	const char *client_caps_json; /* capabilities we advertise, JSON */
	/* Where owner tokens come from (written ahead of use); NULL: fresh
	 * random ones. */
	struct journal *journal;
	/* The loop's HTTP client for url servers, made on first use (it
	 * loads libcurl): called when such a server starts; NULL getter:
	 * url servers fail to start. */
	struct httpc *(*http)(void *arg);
	void *http_arg;
	/* Its sign-in (borrowed, outlives the instance); NULL: none. */
	const struct instance_signin *signin;
	void *signin_arg;
};

/* Waiting for a start: err is 0 when ready, or -errno. */
typedef void (*instance_ready_cb)(void *arg, struct instance *inst, int err);
/* The server's answer (a response with result or error), or one the
 * instance made up when the server went away; borrowed. sent says whether
 * the request had been written to the server. */
typedef void (*instance_reply_cb)(void *arg, json_t *response, bool sent);

struct instance *instance_new(uv_loop_t *loop, const struct instance_spec *spec,
			      const struct instance_cbs *cbs, void *ctx);
/* Stops the server if it runs and frees the instance once it is gone.
 * Waiters and requests in flight are answered with errors first. */
void instance_free(struct instance *inst);

/* Calls cb when the instance is ready, starting it if needed; at once (from
 * inside this call) when it already is. Requests that arrive during a start
 * wait for that one start. */
void instance_ensure(struct instance *inst, instance_ready_cb cb, void *arg);

/* The server's successful answer as text, so it can be passed on without
 * a parse: the whole message and where its "result" value lies. */
typedef void (*instance_text_cb)(void *arg, const char *msg, size_t off,
				 size_t len);

/* What the one scan of an answer given to a text callback found in it,
 * so that a callback that rewrites the answer (a 2026-07-28 client's
 * stamp) need not scan it again: where the result lies, and where the
 * result's members that the 2026-07-28 revision sets lie (offsets in the
 * message; len 0: absent, and all absent when the result is not an
 * object). Names with escapes never match. */
struct instance_answer {
	struct jsonscan_span result;
	struct jsonscan_span result_type; /* "resultType" */
	struct jsonscan_span ttl_ms;	  /* "ttlMs" */
	struct jsonscan_span cache_scope; /* "cacheScope" */
	struct jsonscan_span meta;	  /* "_meta" */
};
/* During a text callback of inst: what the scan of its answer found. */
const struct instance_answer *instance_answer_scan(const struct instance *inst);

/* Sends a request with an id of the instance's own; steals params. Returns
 * the request's server-side id (> 0), or a negative errno when the instance
 * is not ready (cb is not called then). */
int64_t instance_request(struct instance *inst, const char *method,
			 json_t *params, instance_reply_cb cb, void *arg);
/* The same, with text_cb taking a valid successful answer instead of cb
 * (which still takes errors and answers made up by the instance). */
int64_t instance_request_text(struct instance *inst, const char *method,
			      json_t *params, instance_reply_cb cb,
			      instance_text_cb text_cb, void *arg);
/* The same with params already JSON text (an object, params_len bytes,
 * copied): the forwarding path sends a client's call on without a parse.
 * Only for requests that are never re-sent (tools/call). */
int64_t instance_request_raw(struct instance *inst, const char *method,
			     const char *params, size_t params_len,
			     instance_reply_cb cb, instance_text_cb text_cb,
			     void *arg);
/* Drops a request in flight (also one waiting for a re-send: its id is
 * kept across re-sends): its callback will not run, and a server that was
 * sent it is told with notifications/cancelled. False when id is not in
 * flight (answered or failed already: its callback has run). */
bool instance_cancel(struct instance *inst, int64_t id, const char *reason);
/* Sends a notification; steals params. */
int instance_notify(struct instance *inst, const char *method, json_t *params);
/* Answers a request the server sent (id borrowed); steals result or error
 * (exactly one non-NULL). */
int instance_respond(struct instance *inst, json_t *id, json_t *result,
		     json_t *error);
/* The same, only on the connection of generation gen (from
 * instance_conn_gen when the request came): -ESTALE once that connection
 * is gone, so a late answer never reaches the next process. Failures are
 * logged. */
int instance_respond_on(struct instance *inst, uint64_t gen, json_t *id,
			json_t *result, json_t *error);
/* The generation of the current connection (1, 2, ...), 0 when none. */
uint64_t instance_conn_gen(const struct instance *inst);

/* A session that ended still followed uri through inst (n answered
 * subscribes less unsubscribes of its own): they are no longer counted.
 * When nobody else follows it, a running 2025 server is sent
 * resources/unsubscribe; a 2026-07-28 server's listen stream stops
 * following it. Starts nothing. */
void instance_subs_leave(struct instance *inst, const char *uri, unsigned n);
/* How many distinct resources its clients follow (0: none). */
size_t instance_subs_followed(const struct instance *inst);

/* Stops the server: state STOPPING then STOPPED. keep_lists: an idle close
 * (the lists stay offered and the next use starts it again); else the
 * lists are dropped (explicit stop, config change). */
void instance_stop(struct instance *inst, const char *why, bool keep_lists);

enum instance_state instance_state(const struct instance *inst);
const char *instance_state_name(enum instance_state s);
const char *instance_name(const struct instance *inst);
const char *instance_key(const struct instance *inst);
/* Which instance this is among every one the runtime made (1, 2, ...):
 * one closed by a reload and the next of the same key differ, where a
 * pointer may be reused. */
uint64_t instance_serial(const struct instance *inst);
/* The key with secrets fingerprinted: the only one to show or store. */
const char *instance_public_key(const struct instance *inst);
/* The list last seen (a JSON array, borrowed), NULL when never listed. */
json_t *instance_list(const struct instance *inst, enum instance_list which);
struct listindex;
/* That list's items by name (tools, prompts) or uri (resources), made
 * and dropped with it (borrowed: valid while the list is); NULL when it
 * has none (no list, or templates). */
const struct listindex *instance_list_index(const struct instance *inst,
					    enum instance_list which);
/* Why the server's list which failed the last time it was fetched (its
 * error, an answer that could not be read, a bound passed), NULL when it
 * did not; the list is empty then. */
const char *instance_list_error(const struct instance *inst,
				enum instance_list which);
/* Whether any of its lists failed so. */
bool instance_lists_failed(const struct instance *inst);
/* Whether the server declared the capability (tools, prompts, ...). */
bool instance_has_capability(const struct instance *inst, const char *cap);
/* The server answered in 2026-07-28 (its transport speaks that revision
 * to it): per-request settings go in each request's _meta. */
bool instance_speaks_modern(const struct instance *inst);
/* Why it is not running, while it is not (cleared once it runs). */
const char *instance_last_error(const struct instance *inst);
/* With a last_error from a failed start: the first line the server
 * printed on stderr (masked), for the error a host shows; else NULL. */
const char *instance_failure_line(const struct instance *inst);
/* The last failure, whatever the state since: {"reason", "at" (ms since
 * the epoch), "stderr" (masked tail, if any)}; new reference, NULL when
 * it never failed. For status to keep after the instance is gone. */
json_t *instance_last_failure(const struct instance *inst);
/* The same for the server's most recent failure across its instances
 * (its "stderr" is for the verbose view only), with "recoveredAt" (ms
 * since the epoch) once a start went well after it; also after they are
 * gone (NULL: it never failed in this runtime). */
json_t *instance_failure_of(const char *server);
pid_t instance_pid(const struct instance *inst);
/* How often it started (1 for its first start, more after a failure,
 * an explicit restart or an idle close). */
unsigned instance_starts(const struct instance *inst);
unsigned instance_inflight(const struct instance *inst);
/* Status as JSON (state, error, stderr tail, counts; pid when verbose). */
json_t *instance_describe(const struct instance *inst, bool verbose);

/* The server's stored tokens changed (a login or logout, another
 * process's refresh): one that waited for a sign-in starts now (its
 * tools come, and whoever uses it hears list_changed); one signed out
 * while running goes to needs_auth; a running one times its next
 * refresh by the new token. */
void instance_credentials_changed(struct instance *inst);
/* Reads the server's stored tokens again, not waiting for the watch of
 * the token folder: a needs_auth instance whose tokens changed (a login
 * that just ended) starts. True when it did. */
bool instance_signin_recheck(struct instance *inst);
/* Whether the instance signs in with OAuth tokens (a url server with
 * no Authorization header in its config, and an owner that holds
 * tokens): what needs_auth asks of the user is then `mcpvisor login`. */
bool instance_signs_in(const struct instance *inst);

/* Milliseconds until a failed instance may be started again (backoff). */
uint64_t instance_backoff_remaining_ms(const struct instance *inst);
/* Offers lists from the tool cache until the server itself answers (and
 * takes its "era"). */
void instance_seed_lists(struct instance *inst, json_t *lists);
/* What the server's initialize answer said about how to use it (from the
 * tool cache until it runs), or NULL. */
const char *instance_instructions(const struct instance *inst);
/* The lists as {"tools":[...],...} (and "instructions", and "era":
 * "2025" for an HTTP server known to speak a 2025 revision, so the tool
 * cache spares its next start the probe, "2026-07-28" for a process known
 * to speak it, so its next start probes first), new reference. */
json_t *instance_lists_json(const struct instance *inst);
/* Whether the lists are known (from a start, or the cache) so listing
 * needs no start. */
bool instance_lists_known(const struct instance *inst);

/* Owner-held data. */
/* Stops (on) or resumes reading the server's output; kept across its
 * restarts. Called by its flow when its clients read slowly. */
void instance_pause_reads(struct instance *inst, bool on);
/* The count of its output still queued on client connections. */
struct flow *instance_flow(const struct instance *inst);

void instance_set_data(struct instance *inst, void *data);
void *instance_data(const struct instance *inst);

#endif
