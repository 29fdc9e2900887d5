/*
 * The hub: the runtime's sessions by id, the config they resolve servers
 * from, the pool of instances, and the way a server's messages find the
 * session they belong to (progress, logging, list changes, requests).
 */
#ifndef MCPV_HUB_H
#define MCPV_HUB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config/config.h"
#include "pool/pool.h"

struct hub;
struct session;
struct tokens;

struct journal;
struct toolcache;

#define HUB_DEFAULT_SESSION_TIMEOUT_MS (30 * 60 * 1000)
#define HUB_LABEL_LEN 6
/* Sessions at most; at the cap the one idle longest makes room. */
#define HUB_DEFAULT_MAX_SESSIONS 1024

/* Takes ownership of cfg. app_dir: where app-scoped servers start.
 * journal and cache may be NULL and stay the caller's. */
struct hub *hub_new(uv_loop_t *loop, struct config *cfg, const char *app_dir,
		    struct journal *journal, struct toolcache *cache);
/* Sessions idle this long are dropped (0: never). Idle means no request
 * in flight and no lease held, measured from the end of the last one. */
void hub_set_session_timeout(struct hub *hub, uint64_t ms);
/* At most n sessions (0: the default). An initialize at the cap ends the
 * session idle longest; when every session is busy it is refused. */
void hub_set_max_sessions(struct hub *hub, size_t n);
/* Ends expired sessions now (a timer does it every few seconds). */
void hub_sweep(struct hub *hub);
/* Takes ownership of cfg: servers whose settings are unchanged keep
 * running; removed or changed ones close. Returns how many closed. */
unsigned hub_reload(struct hub *hub, struct config *cfg);
/* The config file on disk did not load, so the running config stays: msg
 * says why (copied; shown in status as "reloadError"); NULL clears it, as
 * the next good load does. */
void hub_set_reload_error(struct hub *hub, const char *msg);
/* Explicit controls on a server (NULL name: all servers for stop). They
 * refuse while a call is in flight unless force; *msg says what happened
 * or which call is in the way (caller frees). 0, -EBUSY or -ENOENT. */
int hub_stop_server(struct hub *hub, const char *name, bool force, char **msg);
int hub_restart_server(struct hub *hub, const char *name, bool force,
		       char **msg);
/* Requests in flight on servers. */
unsigned hub_requests(const struct hub *hub);
/* A request on a server ended (the drain may be waiting for that). */
void hub_request_done(struct hub *hub);
/* fn runs (once) when no request is in flight any more. */
void hub_when_quiet(struct hub *hub, void (*fn)(void *arg), void *arg);
/* Ends every session and closes every instance. */
void hub_free(struct hub *hub);

const struct config *hub_config(const struct hub *hub);
struct pool *hub_pool(struct hub *hub);
const char *hub_app_dir(const struct hub *hub);
size_t hub_page_size(const struct hub *hub);
void hub_set_page_size(struct hub *hub, size_t n);

/* Answers an initialize: a new session and the result to send. space may
 * be NULL. NULL (and *out NULL) when the cap is reached and every session
 * is busy: the caller refuses with 503. */
json_t *hub_initialize(struct hub *hub, json_t *params, const char *space,
		       struct session **out);
/* The same with space's .mcp.json as read (ts; NULL: none). */
struct trust_space;
json_t *hub_initialize_read(struct hub *hub, json_t *params, const char *space,
			    struct trust_space *ts, struct session **out);
/* The same off the loop: space's .mcp.json is read by a thread-pool
 * thread (spaces.h) and cb gets what hub_initialize returns, then. cb
 * runs at once without a space (NULL is returned then); otherwise the
 * handle cancels it (the client went away) until cb has run. */
typedef void (*hub_init_cb)(void *arg, json_t *result, struct session *s);
struct hub_init;
struct hub_init *hub_initialize_async(struct hub *hub, json_t *params,
				      const char *space, hub_init_cb cb,
				      void *arg);
void hub_initialize_cancel(struct hub_init *hi);
/* The hub's cache of space files (spaces.h). */
struct spaces *hub_spaces(struct hub *hub);
/* A space's file was read again (reload): its sessions take it. */
void hub_space_loaded(void *arg, const char *dir, struct trust_space *ts);
/* O(1): a hash of the id. */
struct session *hub_session_find(struct hub *hub, const char *id);
/* Ends a session (DELETE): its calls are cancelled upstream. */
void hub_session_end(struct hub *hub, struct session *s);
size_t hub_session_count(const struct hub *hub);

/* The progress tokens given to servers for calls (session/tokens.h). */
struct tokens *hub_tokens(struct hub *hub);
struct call;
/* A call starts (it may cause server messages from now on), and ends (its
 * progress token and its place as a cause go). */
void hub_call_live(struct hub *hub, struct call *c);
void hub_call_gone(struct hub *hub, struct call *c);

/* How much a status shows. Every level shows sessions by a label (a
 * digest of the id), never by id; server stderr and errors are masked. */
enum hub_status_detail {
	HUB_STATUS_PUBLIC,  /* TCP: no stderr, pids or keys */
	HUB_STATUS_NORMAL,  /* the Unix socket: stderr of failed servers */
	HUB_STATUS_VERBOSE, /* the Unix socket with -v: pids and keys too */
};

/* Status of every server and instance, and of the sessions. */
json_t *hub_status(struct hub *hub, enum hub_status_detail detail);
/* An instance as a client may see it (in an error's data): its state,
 * error and stderr tail with every configured secret masked. */
json_t *hub_instance_describe(struct hub *hub, struct instance *inst);
/* The figures of every server (state, scope, instances, sessions, calls,
 * errors, restarts, calls per second, p50 and p99 over the last minute,
 * memory of its processes) and of the runtime (rssBytes, sessions):
 * {"runtime": {...}, "servers": [{...}]} (metrics/prom.h renders it).
 * Memory is read from /proc off the loop, so the answer comes to cb
 * (figures borrowed) later; the handle cancels it until then. NULL when
 * cb ran at once (no thread could take the read: memory reads 0). */
typedef void (*hub_metrics_cb)(void *arg, json_t *figures);
struct hub_metrics_req;
struct hub_metrics_req *hub_metrics_async(struct hub *hub, hub_metrics_cb cb,
					  void *arg);
void hub_metrics_cancel(struct hub_metrics_req *r);
/* The same at once, with memory as given: each server's from rss (by
 * name, bytes; NULL: none) and the runtime's self_rss. New reference. */
json_t *hub_metrics(struct hub *hub, const json_t *rss, uint64_t self_rss);
/* hub_free: reads under way end without calling back. */
void hub_metrics_orphan(struct hub *hub);

/* The short label a session shows as in status and logs. */
void hub_session_label(const char *id, char out[HUB_LABEL_LEN + 1]);

#endif
