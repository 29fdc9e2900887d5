/*
 * One connection to one MCP server and its state machine. The instance
 * spawns the server (through the stdio transport), runs the initialize
 * handshake, fetches its lists, maps its request ids, and reports what the
 * server says to its owner. Policy (who holds it, when it closes) lives in
 * the pool.
 */
#include "instance/instance.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "instance/backoff.h"
#include "journal/journal.h"
#include "jsonrpc/jsonrpc.h"
#include "transport/stdio.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define INSTANCE_STDERR_TAIL 10

struct instance_pending {
	struct instance_pending *next, *prev;
	int64_t id;
	instance_reply_cb cb;
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
	enum server_kind kind;
	char *command;
	char **argv; /* NULL-terminated, without argv[0] */
	char **envp; /* NULL-terminated full environment */
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
	bool freeing_done; /* the owner is gone: report nothing more */
	unsigned handles_open;

	struct instance_cbs cbs;
	void *ctx;
	void *data;
};

static const char *const instance_list_methods[INSTANCE_NLISTS] = {
	"tools/list", "prompts/list", "resources/list",
	"resources/templates/list"};
static const char *const instance_list_keys[INSTANCE_NLISTS] = {
	"tools", "prompts", "resources", "resourceTemplates"};
static const char *const instance_list_caps[INSTANCE_NLISTS] = {
	"tools", "prompts", "resources", "resources"};

static void instance_start(struct instance *inst);
static void instance_fetch_list(struct instance *inst,
				enum instance_list which, json_t *acc,
				const char *cursor, unsigned page);
static void instance_maybe_free(struct instance *inst);

const char *instance_state_name(enum instance_state s)
{
	switch (s) {
	case INSTANCE_STOPPED:
		return "stopped";
	case INSTANCE_STARTING:
		return "starting";
	case INSTANCE_READY:
		return "running";
	case INSTANCE_FAILED:
		return "failed";
	case INSTANCE_NEEDS_AUTH:
		return "needs_auth";
	case INSTANCE_STOPPING:
		return "stopping";
	}
	return "unknown";
}

/* The one place where an instance changes state. */
static void instance_set_state(struct instance *inst, enum instance_state to,
			       const char *why)
{
	enum instance_state from = inst->state;
	if (from == to)
		return;
	inst->state = to;
	if (why)
		log_info("instance %s: %s -> %s (%s)", inst->name,
			 instance_state_name(from), instance_state_name(to),
			 why);
	else
		log_info("instance %s: %s -> %s", inst->name,
			 instance_state_name(from), instance_state_name(to));
	if (inst->cbs.on_state && !inst->freeing)
		inst->cbs.on_state(inst->ctx, inst, from, to);
}

static void instance_set_error(struct instance *inst, char *msg)
{
	free(inst->last_error);
	inst->last_error = msg;
}

static char **instance_copy_strv(char *const *v, size_t n)
{
	char **out = xcalloc(n + 1, sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

static void instance_free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* The parent's environment with the server's env laid over it. */
static char **instance_build_env(const struct server_config *s,
				 size_t *owner_slot)
{
	extern char **environ;
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = xcalloc(n + s->nenv + 2, sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t klen = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		bool overridden = strncmp(environ[i], JOURNAL_OWNER_ENV "=",
					  strlen(JOURNAL_OWNER_ENV "=")) == 0;
		for (size_t j = 0; j < s->nenv; j++) {
			if (strlen(s->env[j].key) == klen &&
			    strncmp(s->env[j].key, environ[i], klen) == 0) {
				overridden = true;
				break;
			}
		}
		if (!overridden)
			env[k++] = xstrdup(environ[i]);
	}
	for (size_t j = 0; j < s->nenv; j++)
		env[k++] = xasprintf("%s=%s", s->env[j].key, s->env[j].value);
	*owner_slot = k;
	env[k++] = xstrdup(JOURNAL_OWNER_ENV "=");
	env[k] = NULL;
	return env;
}

static void instance_handle_close_cb(uv_handle_t *h)
{
	struct instance *inst = h->data;
	inst->handles_open--;
	instance_maybe_free(inst);
}

struct instance *instance_new(uv_loop_t *loop,
			      const struct instance_spec *spec,
			      const struct instance_cbs *cbs, void *ctx)
{
	const struct server_config *s = spec->server;
	struct instance *inst = xcalloc(1, sizeof *inst);
	inst->loop = loop;
	inst->name = xstrdup(s->name);
	inst->key = xstrdup(spec->key);
	inst->kind = s->kind;
	inst->command = s->command ? xstrdup(s->command) : NULL;
	inst->argv = instance_copy_strv(s->args, s->nargs);
	inst->envp = instance_build_env(s, &inst->owner_slot);
	inst->cwd = spec->cwd ? xstrdup(spec->cwd) : NULL;
	inst->client_caps_json = xstrdup(
		spec->client_caps_json ? spec->client_caps_json : "{}");
	inst->startup_timeout_ms = s->startup_timeout_ms > 0
					   ? (uint64_t)s->startup_timeout_ms
					   : CONFIG_DEFAULT_STARTUP_MS;
	inst->state = INSTANCE_STOPPED;
	inst->next_id = 1;
	inst->pending.next = inst->pending.prev = &inst->pending;
	inst->resend.next = inst->resend.prev = &inst->resend;
	inst->cbs = *cbs;
	inst->ctx = ctx;
	uv_timer_init(loop, &inst->startup_timer);
	inst->startup_timer.data = inst;
	inst->handles_open = 1;
	return inst;
}

static void instance_wake_waiters(struct instance *inst, int err)
{
	while (inst->waiters) {
		struct instance_waiter *w = inst->waiters;
		inst->waiters = w->next;
		w->cb(w->arg, inst, err);
		free(w);
	}
}

static json_t *instance_unavailable_error(struct instance *inst, bool sent)
{
	const char *reason =
		inst->last_error ? inst->last_error : "the server stopped";
	char *msg;
	if (sent)
		msg = xasprintf("Server \"%s\" went away while handling the "
				"request: %s",
				inst->name, reason);
	else
		msg = xasprintf("Server \"%s\" is not available: %s",
				inst->name, reason);
	json_t *data = json_object();
	json_object_set_new(data, "server", json_string(inst->name));
	json_object_set_new(data, "reason", json_string(reason));
	if (inst->stderr_tail && inst->stderr_tail[0])
		json_object_set_new(data, "stderr",
				    json_string(inst->stderr_tail));
	json_t *err = jr_error(NULL, JR_SERVER_UNAVAILABLE, msg, data);
	free(msg);
	return err;
}

static void instance_pending_free(struct instance_pending *p)
{
	free(p->method);
	json_decref(p->params);
	free(p);
}

static void instance_pending_unlink(struct instance_pending *p)
{
	p->prev->next = p->next;
	p->next->prev = p->prev;
	p->next = p->prev = p;
}

static void instance_pending_append(struct instance_pending *head,
				    struct instance_pending *p)
{
	p->prev = head->prev;
	p->next = head;
	head->prev->next = p;
	head->prev = p;
}

/* A request that may have changed something was lost with the server:
 * the client must not be led to run it twice. */
static json_t *instance_lost_call_error(struct instance *inst)
{
	const char *reason =
		inst->last_error ? inst->last_error : "the server stopped";
	char *msg = xasprintf(
		"Server \"%s\" went away while handling this request (%s); it "
		"may or may not have taken effect, so check before retrying.",
		inst->name, reason);
	json_t *data = json_pack("{s:s,s:s,s:b}", "server", inst->name,
				 "reason", reason, "mayHaveRun", 1);
	json_t *err = jr_error(NULL, JR_SERVER_UNAVAILABLE, msg, data);
	free(msg);
	return err;
}

/* The server is gone. With keep_idempotent (a connection that dropped on
 * its own), requests that change nothing wait to be sent again once it is
 * back; every other request in flight gets an error now. */
static void instance_fail_pending(struct instance *inst, bool keep_idempotent)
{
	while (inst->pending.next != &inst->pending) {
		struct instance_pending *p = inst->pending.next;
		instance_pending_unlink(p);
		inst->npending--;
		if (keep_idempotent && !p->internal && p->method &&
		    jr_method_is_idempotent(p->method)) {
			instance_pending_append(&inst->resend, p);
			continue;
		}
		if (p->cb) {
			json_t *err = !p->internal && p->method &&
						      !jr_method_is_idempotent(
							      p->method)
					      ? instance_lost_call_error(inst)
					      : instance_unavailable_error(
							inst, true);
			p->cb(p->arg, err, true);
			json_decref(err);
		}
		instance_pending_free(p);
	}
}

/* The requests kept for a resend cannot be sent: answer them. */
static void instance_fail_resend(struct instance *inst)
{
	while (inst->resend.next != &inst->resend) {
		struct instance_pending *p = inst->resend.next;
		instance_pending_unlink(p);
		if (p->cb) {
			json_t *err = instance_unavailable_error(inst, false);
			p->cb(p->arg, err, false);
			json_decref(err);
		}
		instance_pending_free(p);
	}
}

static void instance_drop_lists(struct instance *inst)
{
	inst->lists_known = false;
	for (int i = 0; i < INSTANCE_NLISTS; i++) {
		json_decref(inst->lists[i]);
		inst->lists[i] = NULL;
	}
}

static void instance_save_stderr(struct instance *inst)
{
	if (inst->conn == NULL)
		return;
	free(inst->stderr_tail);
	inst->stderr_tail =
		stdio_conn_stderr_tail(inst->conn, INSTANCE_STDERR_TAIL);
}

/* Lets go of the current connection and starts its stop ladder. */
static void instance_detach_conn(struct instance *inst, bool settles_stop)
{
	struct stdio_conn *c = inst->conn;
	if (c == NULL)
		return;
	inst->link->detached = true;
	inst->link->settles_stop = settles_stop;
	inst->conn = NULL;
	inst->link = NULL;
	inst->pid = 0;
	stdio_conn_stop(c);
}

/* The connection is unusable: fail what waits on it and go to FAILED (or
 * NEEDS_AUTH). The transport closes itself. A failed start drops the
 * lists and counts for the backoff; a connection that dropped after it
 * was ready keeps them (tools kept, reconnects when next used). */
static void instance_fail(struct instance *inst, enum instance_state to,
			  char *why)
{
	bool was_starting = inst->state == INSTANCE_STARTING;
	bool was_ready = inst->state == INSTANCE_READY;
	instance_save_stderr(inst);
	instance_set_error(inst, why);
	uv_timer_stop(&inst->startup_timer);
	instance_detach_conn(inst, false);
	if (was_starting || to == INSTANCE_NEEDS_AUTH) {
		instance_drop_lists(inst);
		inst->lists_cached = false;
	}
	if (was_starting)
		backoff_fail(&inst->backoff, clock_now_ms());
	instance_set_state(inst, to, inst->last_error);
	instance_fail_pending(inst, was_ready && to == INSTANCE_FAILED);
	if (!was_ready)
		instance_fail_resend(inst);
	instance_wake_waiters(inst, to == INSTANCE_NEEDS_AUTH ? -EACCES
							      : -EIO);
	/* Requests that change nothing were lost with a dropped connection:
	 * they need the server, so it comes back now, once. */
	if (inst->resend.next != &inst->resend && !inst->freeing)
		instance_start(inst);
}

static void instance_startup_timeout_cb(uv_timer_t *t)
{
	struct instance *inst = t->data;
	if (inst->state != INSTANCE_STARTING)
		return;
	instance_fail(inst, INSTANCE_FAILED,
		      xasprintf("did not finish starting within %llu ms",
				(unsigned long long)inst->startup_timeout_ms));
}

static struct instance_pending *instance_take_pending(struct instance *inst,
						      int64_t id)
{
	for (struct instance_pending *p = inst->pending.next;
	     p != &inst->pending; p = p->next) {
		if (p->id == id) {
			p->prev->next = p->next;
			p->next->prev = p->prev;
			inst->npending--;
			return p;
		}
	}
	return NULL;
}

static int instance_write(struct instance *inst, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	if (s == NULL)
		return -EINVAL;
	int rc = stdio_conn_send(inst->conn, s, strlen(s));
	free(s);
	return rc;
}

static int64_t instance_send_request(struct instance *inst, const char *method,
				     json_t *params, instance_reply_cb cb,
				     void *arg, bool internal)
{
	if (inst->conn == NULL) {
		json_decref(params);
		return -EPIPE;
	}
	int64_t id = inst->next_id++;
	json_t *msg = jr_request(json_integer(id), method,
				 params ? json_incref(params) : NULL);
	int rc = instance_write(inst, msg);
	json_decref(msg);
	if (rc < 0) {
		json_decref(params);
		return rc;
	}
	struct instance_pending *p = xcalloc(1, sizeof *p);
	p->id = id;
	p->cb = cb;
	p->arg = arg;
	p->internal = internal;
	if (!internal) {
		p->method = xstrdup(method);
		p->params = params;
	} else {
		json_decref(params);
	}
	instance_pending_append(&inst->pending, p);
	inst->npending++;
	return id;
}

/* Sends again what a dropped connection lost and changed nothing. */
static void instance_resend(struct instance *inst)
{
	while (inst->resend.next != &inst->resend) {
		struct instance_pending *p = inst->resend.next;
		instance_pending_unlink(p);
		log_info("instance %s: sending %s again after the reconnect",
			 inst->name, p->method);
		if (instance_send_request(inst, p->method, json_incref(p->params),
					  p->cb, p->arg, false) < 0 &&
		    p->cb) {
			json_t *err = instance_unavailable_error(inst, false);
			p->cb(p->arg, err, false);
			json_decref(err);
		}
		instance_pending_free(p);
	}
}

int64_t instance_request(struct instance *inst, const char *method,
			 json_t *params, instance_reply_cb cb, void *arg)
{
	if (inst->state != INSTANCE_READY) {
		json_decref(params);
		return -EAGAIN;
	}
	return instance_send_request(inst, method, params, cb, arg, false);
}

void instance_cancel(struct instance *inst, int64_t id, const char *reason)
{
	struct instance_pending *p = instance_take_pending(inst, id);
	if (p == NULL) {
		/* Waiting for a resend: it never reaches the server now. */
		for (struct instance_pending *q = inst->resend.next;
		     q != &inst->resend; q = q->next) {
			if (q->id == id) {
				instance_pending_unlink(q);
				instance_pending_free(q);
				return;
			}
		}
		return;
	}
	instance_pending_free(p);
	if (inst->conn == NULL)
		return;
	json_t *params = json_object();
	json_object_set_new(params, "requestId", json_integer(id));
	if (reason)
		json_object_set_new(params, "reason", json_string(reason));
	instance_notify(inst, "notifications/cancelled", params);
}

int instance_notify(struct instance *inst, const char *method, json_t *params)
{
	if (inst->conn == NULL) {
		json_decref(params);
		return -EPIPE;
	}
	json_t *msg = jr_notification(method, params);
	int rc = instance_write(inst, msg);
	json_decref(msg);
	return rc;
}

int instance_respond(struct instance *inst, json_t *id, json_t *result,
		     json_t *error)
{
	if (inst->conn == NULL) {
		json_decref(result);
		json_decref(error);
		return -EPIPE;
	}
	json_t *msg = json_object();
	json_object_set_new(msg, "jsonrpc", json_string("2.0"));
	json_object_set(msg, "id", id);
	if (error)
		json_object_set_new(msg, "error", error);
	else
		json_object_set_new(msg, "result",
				    result ? result : json_object());
	int rc = instance_write(inst, msg);
	json_decref(msg);
	return rc;
}

/* ---- startup: initialize, initialized, first lists ---- */

static void instance_lists_done(struct instance *inst)
{
	if (inst->state != INSTANCE_STARTING || inst->starting_lists > 0)
		return;
	uv_timer_stop(&inst->startup_timer);
	uint64_t ms = clock_now_ms() - inst->started_ms;
	char *why = xasprintf("ready in %llu ms", (unsigned long long)ms);
	backoff_reset(&inst->backoff);
	inst->lists_cached = false;
	inst->lists_known = true;
	instance_set_state(inst, INSTANCE_READY, why);
	free(why);
	if (inst->cbs.on_lists)
		inst->cbs.on_lists(inst->ctx, inst);
	instance_resend(inst);
	instance_wake_waiters(inst, 0);
}

struct instance_list_fetch {
	struct instance *inst;
	enum instance_list which;
	json_t *acc;
	unsigned page;
};

static void instance_list_reply_cb(void *arg, json_t *resp, bool sent)
{
	struct instance_list_fetch *f = arg;
	struct instance *inst = f->inst;
	json_t *result = json_object_get(resp, "result");
	json_t *items = json_object_get(result, instance_list_keys[f->which]);
	bool starting = inst->state == INSTANCE_STARTING;
	if (!json_is_array(items)) {
		/* A server that errors on a list it declared offers nothing
		 * of that kind; it is not a reason to fail the start. */
		if (inst->state == INSTANCE_STARTING ||
		    inst->state == INSTANCE_READY)
			log_warn("instance %s: %s failed; treating as empty",
				 inst->name,
				 instance_list_methods[f->which]);
	} else {
		size_t i;
		json_t *item;
		json_array_foreach(items, i, item)
		{
			if (json_array_size(f->acc) >= INSTANCE_MAX_LIST_ITEMS)
				break;
			if (json_is_object(item))
				json_array_append(f->acc, item);
		}
		const char *cursor =
			json_string_value(json_object_get(result, "nextCursor"));
		if (cursor && cursor[0] && f->page + 1 < INSTANCE_MAX_LIST_PAGES &&
		    json_array_size(f->acc) < INSTANCE_MAX_LIST_ITEMS &&
		    inst->conn) {
			instance_fetch_list(inst, f->which, f->acc, cursor,
					    f->page + 1);
			json_decref(f->acc);
			free(f);
			return;
		}
	}
	if (inst->conn && (starting || inst->state == INSTANCE_READY)) {
		json_decref(inst->lists[f->which]);
		inst->lists[f->which] = json_incref(f->acc);
		if (starting) {
			inst->starting_lists--;
			instance_lists_done(inst);
		} else if (inst->cbs.on_lists) {
			inst->cbs.on_lists(inst->ctx, inst);
		}
	}
	json_decref(f->acc);
	free(f);
}

static void instance_fetch_list(struct instance *inst,
				enum instance_list which, json_t *acc,
				const char *cursor, unsigned page)
{
	struct instance_list_fetch *f = xcalloc(1, sizeof *f);
	f->inst = inst;
	f->which = which;
	f->acc = acc ? json_incref(acc) : json_array();
	f->page = page;
	json_t *params = json_object();
	if (cursor)
		json_object_set_new(params, "cursor", json_string(cursor));
	if (instance_send_request(inst, instance_list_methods[which], params,
				  instance_list_reply_cb, f, true) < 0) {
		json_decref(f->acc);
		free(f);
	}
}

static bool instance_is_auth_error(json_t *error)
{
	json_int_t code = json_integer_value(json_object_get(error, "code"));
	json_t *data = json_object_get(error, "data");
	json_int_t status = json_integer_value(json_object_get(data, "status"));
	const char *msg = json_string_value(json_object_get(error, "message"));
	if (status == 401 || status == 403)
		return true;
	if (code == -32001 && msg &&
	    (strcasestr(msg, "unauthorized") || strcasestr(msg, "auth")))
		return true;
	return false;
}

static void instance_init_reply_cb(void *arg, json_t *resp, bool sent)
{
	struct instance *inst = arg;
	if (inst->state != INSTANCE_STARTING)
		return;
	json_t *error = json_object_get(resp, "error");
	json_t *result = json_object_get(resp, "result");
	if (error) {
		const char *m = json_string_value(json_object_get(error, "message"));
		bool auth = instance_is_auth_error(error);
		instance_fail(inst, auth ? INSTANCE_NEEDS_AUTH : INSTANCE_FAILED,
			      xasprintf("initialize failed: %s",
					m ? m : "(no message)"));
		return;
	}
	const char *version =
		json_string_value(json_object_get(result, "protocolVersion"));
	if (!mcp_version_supported(version)) {
		instance_fail(inst, INSTANCE_FAILED,
			      xasprintf("server answered initialize with "
					"protocol version \"%s\", which mcpvisor "
					"does not speak",
					version ? version : "(none)"));
		return;
	}
	free(inst->protocol_version);
	inst->protocol_version = xstrdup(version);
	json_t *caps = json_object_get(result, "capabilities");
	json_decref(inst->caps);
	inst->caps = json_is_object(caps) ? json_incref(caps) : json_object();
	instance_notify(inst, "notifications/initialized", NULL);
	/* The first lists are fetched together; the instance is ready when
	 * all have come back. */
	inst->starting_lists = 0;
	for (int i = 0; i < INSTANCE_NLISTS; i++)
		if (instance_has_capability(inst, instance_list_caps[i]))
			inst->starting_lists++;
	if (inst->starting_lists == 0) {
		instance_lists_done(inst);
		return;
	}
	for (int i = 0; i < INSTANCE_NLISTS; i++)
		if (instance_has_capability(inst, instance_list_caps[i]))
			instance_fetch_list(inst, (enum instance_list)i, NULL,
					    NULL, 0);
}

/* ---- messages from the server ---- */

static void instance_handle_notification(struct instance *inst, json_t *msg)
{
	const char *method = jr_method(msg);
	for (int i = 0; i < INSTANCE_NLISTS; i++) {
		if (i == INSTANCE_TEMPLATES)
			continue;
		char name[64];
		snprintf(name, sizeof name, "notifications/%s/list_changed",
			 instance_list_caps[i]);
		if (strcmp(method, name) == 0 &&
		    inst->state == INSTANCE_READY) {
			instance_fetch_list(inst, (enum instance_list)i, NULL,
					    NULL, 0);
			if (i == INSTANCE_RESOURCES)
				instance_fetch_list(inst, INSTANCE_TEMPLATES,
						    NULL, NULL, 0);
			return;
		}
	}
	if (inst->cbs.on_notification)
		inst->cbs.on_notification(inst->ctx, inst, msg);
}

static void instance_message_cb(void *ctx, const char *line, size_t len)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	if (link->detached)
		return;
	json_error_t jerr;
	json_t *msg = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
	if (msg == NULL) {
		log_warn("instance %s: skipped a line that is not JSON (%s)",
			 inst->name, jerr.text);
		return;
	}
	const char *why;
	switch (jr_classify(msg, &why)) {
	case JR_RESPONSE: {
		json_t *id = jr_id(msg);
		struct instance_pending *p =
			json_is_integer(id)
				? instance_take_pending(inst,
							json_integer_value(id))
				: NULL;
		if (p == NULL) {
			log_debug("instance %s: answer to an unknown or "
				  "cancelled request; dropped",
				  inst->name);
			break;
		}
		if (p->cb)
			p->cb(p->arg, msg, true);
		instance_pending_free(p);
		break;
	}
	case JR_NOTIFICATION:
		instance_handle_notification(inst, msg);
		break;
	case JR_REQUEST:
		if (strcmp(jr_method(msg), "ping") == 0)
			instance_respond(inst, jr_id(msg), json_object(), NULL);
		else if (inst->cbs.on_request)
			inst->cbs.on_request(inst->ctx, inst, msg);
		else
			instance_respond(inst, jr_id(msg), NULL,
					 json_pack("{s:i,s:s}", "code",
						   JR_METHOD_NOT_FOUND,
						   "message",
						   "method not found"));
		break;
	case JR_INVALID:
		log_warn("instance %s: skipped an invalid message (%s)",
			 inst->name, why);
		break;
	}
	json_decref(msg);
}

static void instance_garbage_cb(void *ctx, const char *what)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	log_warn("instance %s: %s", inst->name, what);
}

static char *instance_exit_reason(int64_t status, int sig)
{
	if (sig)
		return xasprintf("exited on signal %d (%s)", sig,
				 strsignal(sig));
	if (status >= 0)
		return xasprintf("exited with code %lld", (long long)status);
	return xstrdup("closed its output");
}

static void instance_exit_cb(void *ctx, int64_t status, int sig)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	if (link->detached)
		return;
	char *reason = instance_exit_reason(status, sig);
	char *why = inst->state == INSTANCE_STARTING
			    ? xasprintf("%s during startup", reason)
			    : xstrdup(reason);
	free(reason);
	instance_fail(inst, INSTANCE_FAILED, why);
}

static void instance_closed_cb(void *ctx)
{
	struct instance_link *link = ctx;
	struct instance *inst = link->inst;
	bool settles = link->settles_stop;
	if (!link->detached) {
		/* Closed without a stop (the transport gave up on its own):
		 * treat it as a drop. */
		inst->conn = NULL;
		inst->link = NULL;
		if (inst->state == INSTANCE_STARTING ||
		    inst->state == INSTANCE_READY)
			instance_fail(inst, INSTANCE_FAILED,
				      xstrdup("connection closed"));
	}
	if (inst->cbs.on_process && !inst->freeing_done)
		inst->cbs.on_process(inst->ctx, inst, link->pid, 0, link->token,
				     false);
	free(link);
	if (settles && inst->state == INSTANCE_STOPPING) {
		instance_set_state(inst, INSTANCE_STOPPED, NULL);
		instance_wake_waiters(inst, -ECANCELED);
		if (inst->restart_after_stop && !inst->freeing) {
			inst->restart_after_stop = false;
			instance_start(inst);
		}
	}
	inst->handles_open--;
	instance_maybe_free(inst);
}

static const struct stdio_conn_cbs instance_conn_cbs = {
	.on_message = instance_message_cb,
	.on_garbage = instance_garbage_cb,
	.on_exit = instance_exit_cb,
	.on_closed = instance_closed_cb,
};

static void instance_new_token(char out[JOURNAL_TOKEN_LEN + 1])
{
	unsigned char raw[JOURNAL_TOKEN_LEN / 2];
	size_t got = 0;
	while (got < sizeof raw) {
		ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
		if (n > 0)
			got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

static void instance_start(struct instance *inst)
{
	inst->started_ms = clock_now_ms();
	instance_set_state(inst, INSTANCE_STARTING, NULL);
	if (inst->kind != SERVER_STDIO) {
		instance_fail(inst, INSTANCE_FAILED,
			      xstrdup("servers reached by url are not served "
				      "yet; only stdio servers run"));
		return;
	}
	struct stdio_spawn_opts opts = {
		.command = inst->command,
		.args = inst->argv,
		.env = inst->envp,
		.cwd = inst->cwd,
	};
	struct instance_link *link = xcalloc(1, sizeof *link);
	link->inst = inst;
	instance_new_token(link->token);
	free(inst->envp[inst->owner_slot]);
	inst->envp[inst->owner_slot] =
		xasprintf("%s=%s", JOURNAL_OWNER_ENV, link->token);
	int rc = stdio_conn_spawn(inst->loop, &opts, &instance_conn_cbs, link,
				  &inst->conn);
	if (rc < 0) {
		free(link);
		inst->conn = NULL;
		instance_fail(inst, INSTANCE_FAILED,
			      rc == -ENOENT
				      ? xasprintf("command \"%s\" not found",
						  inst->command)
				      : xasprintf("could not start \"%s\": %s",
						  inst->command, strerror(-rc)));
		return;
	}
	inst->link = link;
	inst->handles_open++; /* the conn, until its on_closed */
	inst->pid = stdio_conn_pid(inst->conn);
	link->pid = inst->pid;
	if (inst->cbs.on_process)
		inst->cbs.on_process(inst->ctx, inst, link->pid,
				     stdio_conn_start_time(inst->conn),
				     link->token, true);
	free(inst->stderr_tail);
	inst->stderr_tail = NULL;
	uv_timer_start(&inst->startup_timer, instance_startup_timeout_cb,
		       inst->startup_timeout_ms, 0);
	json_error_t jerr;
	json_t *caps = json_loads(inst->client_caps_json, 0, &jerr);
	json_t *params = json_pack(
		"{s:s,s:o,s:{s:s,s:s}}", "protocolVersion", MCP_LATEST_VERSION,
		"capabilities", caps ? caps : json_object(), "clientInfo",
		"name", "mcpvisor", "version", "0.1.0");
	if (instance_send_request(inst, "initialize", params,
				  instance_init_reply_cb, inst, true) < 0)
		instance_fail(inst, INSTANCE_FAILED,
			      xstrdup("could not write to the server"));
}

void instance_ensure(struct instance *inst, instance_ready_cb cb, void *arg)
{
	if (inst->state == INSTANCE_READY) {
		cb(arg, inst, 0);
		return;
	}
	if (inst->state == INSTANCE_NEEDS_AUTH || inst->freeing) {
		cb(arg, inst, inst->freeing ? -ECANCELED : -EACCES);
		return;
	}
	struct instance_waiter *w = xcalloc(1, sizeof *w);
	w->cb = cb;
	w->arg = arg;
	w->next = inst->waiters;
	inst->waiters = w;
	switch (inst->state) {
	case INSTANCE_FAILED:
		if (!backoff_allows(&inst->backoff, clock_now_ms())) {
			/* Within the backoff: fail at once, spawn nothing. */
			inst->waiters = w->next;
			free(w);
			cb(arg, inst, -EAGAIN);
			return;
		}
		instance_start(inst);
		break;
	case INSTANCE_STOPPED:
		instance_start(inst);
		break;
	case INSTANCE_STOPPING:
		inst->restart_after_stop = true;
		break;
	default:
		break;
	}
}

void instance_stop(struct instance *inst, const char *why, bool keep_lists)
{
	inst->restart_after_stop = false;
	uv_timer_stop(&inst->startup_timer);
	if (!keep_lists) {
		instance_drop_lists(inst);
		inst->lists_cached = false;
	}
	if (inst->conn == NULL) {
		if (inst->state != INSTANCE_STOPPING)
			instance_set_state(inst, INSTANCE_STOPPED, why);
		instance_fail_resend(inst);
		instance_wake_waiters(inst, -ECANCELED);
		return;
	}
	instance_save_stderr(inst);
	instance_set_state(inst, INSTANCE_STOPPING, why);
	instance_set_error(inst, NULL);
	instance_fail_pending(inst, false);
	instance_fail_resend(inst);
	instance_detach_conn(inst, true);
}

static void instance_maybe_free(struct instance *inst)
{
	if (!inst->freeing || inst->handles_open > 0)
		return;
	for (int i = 0; i < INSTANCE_NLISTS; i++)
		json_decref(inst->lists[i]);
	json_decref(inst->caps);
	free(inst->protocol_version);
	free(inst->last_error);
	free(inst->stderr_tail);
	free(inst->name);
	free(inst->key);
	free(inst->command);
	instance_free_strv(inst->argv);
	instance_free_strv(inst->envp);
	free(inst->cwd);
	free(inst->client_caps_json);
	free(inst);
}

void instance_free(struct instance *inst)
{
	if (inst == NULL || inst->freeing)
		return;
	instance_stop(inst, "closed", false);
	inst->freeing = true;
	uv_close((uv_handle_t *)&inst->startup_timer, instance_handle_close_cb);
}

enum instance_state instance_state(const struct instance *inst)
{
	return inst->state;
}

const char *instance_name(const struct instance *inst)
{
	return inst->name;
}

const char *instance_key(const struct instance *inst)
{
	return inst->key;
}

json_t *instance_list(const struct instance *inst, enum instance_list which)
{
	return inst->lists[which];
}

bool instance_has_capability(const struct instance *inst, const char *cap)
{
	return inst->caps && json_object_get(inst->caps, cap) != NULL;
}

const char *instance_last_error(const struct instance *inst)
{
	return inst->last_error;
}

pid_t instance_pid(const struct instance *inst)
{
	return inst->pid;
}

unsigned instance_inflight(const struct instance *inst)
{
	unsigned n = 0;
	for (const struct instance_pending *p = inst->pending.next;
	     p != &inst->pending; p = p->next)
		if (!p->internal)
			n++;
	return n;
}

json_t *instance_describe(const struct instance *inst, bool verbose)
{
	json_t *o = json_object();
	json_object_set_new(o, "state",
			    json_string(instance_state_name(inst->state)));
	if (inst->last_error)
		json_object_set_new(o, "error", json_string(inst->last_error));
	if (inst->stderr_tail && inst->stderr_tail[0])
		json_object_set_new(o, "stderr", json_string(inst->stderr_tail));
	else if (inst->conn) {
		char *tail = stdio_conn_stderr_tail(inst->conn,
						    INSTANCE_STDERR_TAIL);
		if (tail[0])
			json_object_set_new(o, "stderr", json_string(tail));
		free(tail);
	}
	json_t *counts = json_object();
	for (int i = 0; i < INSTANCE_NLISTS; i++)
		if (inst->lists[i])
			json_object_set_new(
				counts, instance_list_keys[i],
				json_integer((json_int_t)json_array_size(
					inst->lists[i])));
	json_object_set_new(o, "lists", counts);
	json_object_set_new(o, "inflight",
			    json_integer(instance_inflight(inst)));
	if (inst->protocol_version)
		json_object_set_new(o, "protocolVersion",
				    json_string(inst->protocol_version));
	if (inst->state == INSTANCE_FAILED && inst->lists[INSTANCE_TOOLS])
		json_object_set_new(
			o, "note",
			json_string("(tools kept; reconnects when next used)"));
	if (inst->lists_cached)
		json_object_set_new(o, "listsFromCache", json_true());
	uint64_t wait = instance_backoff_remaining_ms(inst);
	if (inst->state == INSTANCE_FAILED && wait > 0)
		json_object_set_new(o, "nextAttemptInMs",
				    json_integer((json_int_t)wait));
	if (verbose) {
		if (inst->pid > 0)
			json_object_set_new(o, "pid", json_integer(inst->pid));
		json_object_set_new(o, "key", json_string(inst->key));
	}
	return o;
}

uint64_t instance_backoff_remaining_ms(const struct instance *inst)
{
	return backoff_remaining_ms(&inst->backoff, clock_now_ms());
}

void instance_seed_lists(struct instance *inst, json_t *lists)
{
	if (inst->state == INSTANCE_READY || inst->lists_known)
		return;
	for (int i = 0; i < INSTANCE_NLISTS; i++) {
		json_t *a = json_object_get(lists, instance_list_keys[i]);
		if (json_is_array(a)) {
			json_decref(inst->lists[i]);
			inst->lists[i] = json_incref(a);
		}
	}
	inst->lists_cached = true;
	inst->lists_known = true;
}

json_t *instance_lists_json(const struct instance *inst)
{
	json_t *o = json_object();
	for (int i = 0; i < INSTANCE_NLISTS; i++)
		if (inst->lists[i])
			json_object_set(o, instance_list_keys[i],
					inst->lists[i]);
	return o;
}

bool instance_lists_known(const struct instance *inst)
{
	return inst->lists_known;
}

bool instance_lists_cached(const struct instance *inst)
{
	return inst->lists_cached;
}

void instance_detach_owner(struct instance *inst)
{
	inst->freeing_done = true;
}

void instance_set_data(struct instance *inst, void *data)
{
	inst->data = data;
}

void *instance_data(const struct instance *inst)
{
	return inst->data;
}
