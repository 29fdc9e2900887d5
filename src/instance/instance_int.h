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

struct stdio_conn;

#define INSTANCE_STDERR_TAIL 10

struct instance_pending {
	struct instance_pending *next, *prev;
	int64_t id;
	instance_reply_cb cb;
	instance_text_cb text_cb;
	void *arg;
	bool internal; /* part of the startup or a list refresh */
	char *method;  /* client requests: kept to decide on a resend */
	json_t *params;
};

/* The transport's context: one per spawned connection, so that late
 * callbacks of a connection the instance already let go of are told
 * apart from the current one's. */
struct instance_link {
	struct instance *inst;
	pid_t pid;
	char token[JOURNAL_TOKEN_LEN + 1];
	bool detached;	   /* no longer the instance's connection */
	bool settles_stop; /* its on_closed ends a STOPPING state */
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
	char **argv;	   /* NULL-terminated, without argv[0] */
	char **envp;	   /* NULL-terminated full environment */
	size_t owner_slot; /* envp index of MCPVISOR_OWNER=token */
	char *cwd;
	char *client_caps_json;
	uint64_t startup_timeout_ms;

	enum instance_state state;
	struct stdio_conn *conn;
	struct instance_link *link; /* of conn */
	pid_t pid;
	uint64_t started_ms;
	int64_t next_id;
	struct instance_pending pending; /* list head */
	unsigned npending;
	/* Requests that change nothing, lost with a dropped connection: sent
	 * again once the server is back. */
	struct instance_pending resend;
	struct backoff backoff;
	bool lists_cached; /* lists came from the tool cache, not the server */
	bool lists_known;  /* lists came from a start or from the cache */
	struct instance_waiter *waiters;
	unsigned starting_lists; /* first lists still to come */
	bool restart_after_stop;

	json_t *lists[INSTANCE_NLISTS];
	json_t *caps;
	char *protocol_version;
	char *last_error;
	char *stderr_tail;

	uv_timer_t startup_timer;
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

/* requests.c: ids, requests in flight, messages from the server */
json_t *instance_unavailable_error(struct instance *inst, bool sent);
void instance_fail_pending(struct instance *inst, bool keep_idempotent);
void instance_fail_resend(struct instance *inst);
int64_t instance_send_request(struct instance *inst, const char *method,
			      json_t *params, instance_reply_cb cb, void *arg,
			      bool internal);
void instance_resend(struct instance *inst);
void instance_message_cb(void *ctx, const char *line, size_t len);
void instance_garbage_cb(void *ctx, const char *what);

/* catalog.c: the handshake and the lists */
void instance_init_reply_cb(void *arg, json_t *resp, bool sent);
void instance_fetch_list(struct instance *inst, enum instance_list which,
			 json_t *acc, const char *cursor, unsigned page);

#endif
