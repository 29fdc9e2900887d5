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
#include "journal/journal.h"
#include "jsonrpc/outbox.h"
#include "transport/supervisor.h"
#include "util/buf.h"

#define INSTANCE_STDERR_TAIL 10

/* The seam between an instance and what carries its messages: the stdio
 * transport in the runtime, a fake in unit tests. Its calls mirror
 * stdio_conn_*; issue 10's upstream_ops grows from here (the instance
 * already treats the connection as opaque). */
struct secrets;

struct instance_transport {
	int (*open)(uv_loop_t *loop, const struct sup_spec *opts,
		    const struct sup_cbs *cbs, void *ctx, void **conn);
	/* 0, -EPIPE (gone), -ENOBUFS (its input is full). */
	int (*send)(void *conn, const char *msg, size_t len);
	void (*stop)(void *conn);
	pid_t (*pid)(const void *conn);
	uint64_t (*start_time)(const void *conn);
	char *(*stderr_tail)(const void *conn, int n);
	/* Stops or resumes reading the server's output. May be NULL. */
	void (*pause)(void *conn, bool on);
};

extern const struct instance_transport instance_stdio_transport;

/* The transport's context: one per spawned connection, so that late
 * callbacks of a connection the instance already let go of are told
 * apart from the current one's. */
struct instance_link {
	struct instance *inst;
	uint64_t gen; /* connection generation: 1, 2, ... per instance */
	pid_t pid;
	char token[JOURNAL_TOKEN_LEN + 1];
	bool detached;	   /* no longer the instance's connection */
	bool settles_stop; /* its on_closed ends a STOPPING state */
	bool stderr_seen;  /* some stderr line came (for the failure) */
};

struct instance_waiter {
	struct instance_waiter *next;
	instance_ready_cb cb;
	void *arg;
};

struct instance {
	uv_loop_t *loop;
	char *name;
	char *key;
	char *public_key;
	enum server_kind kind;
	char *command;
	char **argv; /* NULL-terminated, without argv[0] */
	char **envp; /* NULL-terminated full environment */

	char *cwd;
	char *client_caps_json;
	struct journal *journal; /* owner tokens; borrowed, may be NULL */
	uint64_t startup_timeout_ms;

	uint64_t tool_timeout_ms; /* 0: none */
	struct secrets *secrets;  /* masked in what the server prints */

	enum instance_state state;
	const struct instance_transport *tp;
	void *conn;
	struct instance_link *link; /* of conn */
	uint64_t gen;		    /* of the newest link */
	pid_t pid;
	uint64_t started_ms;
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
	bool restart_after_stop;
	const char *stop_why; /* during instance_stop: why (borrowed) */

	json_t *lists[INSTANCE_NLISTS];
	json_t *caps;
	char *instructions; /* from its initialize answer, or the cache */
	char *protocol_version;
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
/* The connection is unusable: go to to (FAILED or NEEDS_AUTH) with why
 * (taken). */
void instance_fail(struct instance *inst, enum instance_state to, char *why);
void instance_start(struct instance *inst);

/* failure.c: stderr, secrets masked, the last failure */
/* A copy of s (len bytes) with every configured secret value masked. */
char *instance_mask(const struct instance *inst, const char *s, size_t len);
/* The connection's stderr tail, masked (caller frees). */
char *instance_stderr_now(const struct instance *inst);
/* Keeps the tail in inst->stderr_tail before the connection goes. */
void instance_save_stderr(struct instance *inst);
/* The first line of tail, cut short; NULL when none. */
char *instance_first_line(const char *tail);
/* last_error and the stderr tail become the last failure, timed. */
void instance_record_failure(struct instance *inst);
/* The stdio transport's on_stderr: the line, masked, to the log. */
void instance_stderr_cb(void *ctx, const char *line, size_t len);
/* Replaces the transport (unit tests); before the first start. */
void instance_set_transport(struct instance *inst,
			    const struct instance_transport *tp);

/* requests.c: ids, requests in flight, messages from the server */
/* Why requests are lost now: the failure, or why it is being stopped. */
const char *instance_lost_reason(const struct instance *inst);
json_t *instance_unavailable_error(struct instance *inst, bool sent);
/* The connection is gone. keep_idempotent: requests that change nothing
 * and were sent once are queued for one re-send; the rest get errors. */
void instance_fail_pending(struct instance *inst, bool keep_idempotent);
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
void instance_message_cb(void *ctx, const char *line, size_t len);
void instance_garbage_cb(void *ctx, const char *what);
void instance_overlong_cb(void *ctx, const char *head, size_t head_len,
			  const char *tail, size_t tail_len);

/* catalog.c: the handshake and the lists */
void instance_init_reply_cb(void *arg, json_t *resp, bool sent);
void instance_fetch_list(struct instance *inst, enum instance_list which,
			 json_t *acc, const char *cursor, unsigned page);

#endif
