/*
 * One connection to one MCP server and its state machine: every change of
 * state goes through instance_set_state, which logs it. The instance
 * opens the server through its transport (upstream_ops, whatever kind),
 * wakes the requests that wait for its start, fails what it loses, backs
 * off failed starts, and stops it. Requests and their ids are in
 * requests.c, the handshake and lists in catalog.c, the transport's
 * callbacks and what each fault means in link.c. Policy (who holds it,
 * when it closes) lives in the pool.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "config/secrets.h"
#include "instance/backoff.h"
#include "instance/instance_int.h"
#include "journal/journal.h"
#include "jsonrpc/envelope.h"
#include "jsonrpc/jsonrpc.h"
#include "jsonrpc/outbox.h"
#include "transport/upstream.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/flow.h"
#include "util/log.h"
#include "util/random.h"
#include "util/xmalloc.h"

const char *const instance_list_methods[INSTANCE_NLISTS] = {
	"tools/list", "prompts/list", "resources/list",
	"resources/templates/list"};
const char *const instance_list_keys[INSTANCE_NLISTS] = {
	"tools", "prompts", "resources", "resourceTemplates"};
const char *const instance_list_caps[INSTANCE_NLISTS] = {
	"tools", "prompts", "resources", "resources"};

unsigned instance_starts(const struct instance *inst)
{
	return inst->starts;
}

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
void instance_set_state(struct instance *inst, enum instance_state to,
			const char *why)
{
	enum instance_state from = inst->state;
	if (from == to)
		return;
	inst->state = to;
	/* What the caps held back goes first: the log reads in order. */
	instance_noise_flush(inst);
	if (why)
		log_info("instance %s: %s -> %s (%s)", inst->name,
			 instance_state_name(from), instance_state_name(to),
			 why);
	else
		log_info("instance %s: %s -> %s", inst->name,
			 instance_state_name(from), instance_state_name(to));
	/* The refresh ahead of expiry runs while the server does. */
	if (inst->signin)
		instance_signin_state(inst);
	/* Before anything that waited for the start is sent: a client's
	 * unsubscribe that waited goes after the subscribe it undoes. */
	if (to == INSTANCE_READY && from == INSTANCE_STARTING)
		instance_subs_restore(inst);
	if (inst->cbs.on_state && !inst->freeing)
		inst->cbs.on_state(inst->ctx, inst, from, to);
}

void instance_set_error(struct instance *inst, char *msg)
{
	free(inst->last_error);
	inst->last_error = msg;
}

/* What the transports read of the server's entry, copied: the config
 * it came from may be reloaded and freed while the instance lives. */
static struct config_kv *instance_copy_kv(const struct config_kv *kv, size_t n)
{
	if (n == 0)
		return NULL;
	struct config_kv *out = xcalloc(n, sizeof *out);
	for (size_t i = 0; i < n; i++) {
		out[i].key = xstrdup(kv[i].key);
		out[i].value = xstrdup(kv[i].value);
	}
	return out;
}

static void instance_copy_server(struct server_config *d,
				 const struct server_config *s)
{
	d->name = xstrdup(s->name);
	d->kind = s->kind;
	d->command = s->command ? xstrdup(s->command) : NULL;
	d->args = xstrvdup(s->args, s->nargs);
	d->args_tpl = xstrvdup(s->args_tpl, s->nargs);
	d->nargs = s->nargs;
	d->env = instance_copy_kv(s->env, s->nenv);
	d->env_tpl = xstrvdup(s->env_tpl, s->nenv);
	d->nenv = s->nenv;
	d->cwd = s->cwd ? xstrdup(s->cwd) : NULL;
	d->url = s->url ? xstrdup(s->url) : NULL;
	size_t nvars = 0;
	while (s->url_vars && s->url_vars[nvars])
		nvars++;
	d->url_vars = nvars ? xstrvdup(s->url_vars, nvars) : NULL;
	d->headers = instance_copy_kv(s->headers, s->nheaders);
	d->headers_tpl = xstrvdup(s->headers_tpl, s->nheaders);
	d->nheaders = s->nheaders;
	d->http_type = s->http_type;
	d->scope = s->scope;
	d->exposure = s->exposure;
	d->prefix = xstrdup(s->prefix ? s->prefix : "");
	d->startup_timeout_ms = s->startup_timeout_ms;
	d->idle_timeout_ms = s->idle_timeout_ms;
	d->tool_timeout_ms = s->tool_timeout_ms;
	d->container = config_container_dup(s->container);
}

static void instance_handle_close_cb(uv_handle_t *h)
{
	struct instance *inst = h->data;
	inst->handles_open--;
	instance_maybe_free(inst);
}

static void instance_flow_cb(void *arg, bool on)
{
	instance_pause_reads(arg, on);
}

void instance_pause_reads(struct instance *inst, bool on)
{
	if (inst->reads_paused != on)
		log_debug("instance %s: %s reading its output", inst->name,
			  on ? "clients are slow, pausing" : "resuming");
	inst->reads_paused = on;
	if (inst->up && inst->ops->pause)
		inst->ops->pause(inst->up, on);
}

struct flow *instance_flow(const struct instance *inst)
{
	return inst->flow;
}

struct instance *instance_new(uv_loop_t *loop, const struct instance_spec *spec,
			      const struct instance_cbs *cbs, void *ctx)
{
	const struct server_config *s = spec->server;
	static uint64_t serials;
	struct instance *inst = xcalloc(1, sizeof *inst);
	inst->loop = loop;
	inst->serial = ++serials;
	inst->flow = flow_new(instance_flow_cb, inst);
	inst->name = xstrdup(s->name);
	inst->key = xstrdup(spec->key);
	inst->public_key =
		xstrdup(spec->public_key ? spec->public_key : "(not shown)");
	inst->kind = s->kind;
	instance_copy_server(&inst->server, s);
	inst->ops = upstream_ops_for(s);
	inst->http = spec->http;
	inst->http_arg = spec->http_arg;
	inst->signin = spec->signin;
	inst->signin_arg = spec->signin_arg;
	inst->cwd = spec->cwd ? xstrdup(spec->cwd) : NULL;
	inst->client_caps_json =
		xstrdup(spec->client_caps_json ? spec->client_caps_json : "{}");
	inst->journal = spec->journal;
	inst->startup_timeout_ms = s->startup_timeout_ms > 0
					   ? (uint64_t)s->startup_timeout_ms
					   : CONFIG_DEFAULT_STARTUP_MS;
	inst->tool_timeout_ms =
		s->tool_timeout_ms > 0 ? (uint64_t)s->tool_timeout_ms : 0;
	inst->secrets = secrets_new();
	secrets_add_server(inst->secrets, s);
	inst->state = INSTANCE_STOPPED;
	inst->outbox = outbox_new();
	buf_init(&inst->scratch);
	inst->cbs = *cbs;
	inst->ctx = ctx;
	uv_timer_init(loop, &inst->startup_timer);
	inst->startup_timer.data = inst;
	uv_timer_init(loop, &inst->deadline_timer);
	inst->deadline_timer.data = inst;
	uv_timer_init(loop, &inst->noise_timer);
	inst->noise_timer.data = inst;
	uv_timer_init(loop, &inst->signin_timer);
	inst->signin_timer.data = inst;
	ratelimit_init(&inst->warn_limit, INSTANCE_WARN_BURST,
		       INSTANCE_WARN_WINDOW_MS);
	ratelimit_init(&inst->stderr_limit, INSTANCE_STDERR_BURST,
		       INSTANCE_STDERR_WINDOW_MS);
	inst->handles_open = 4;
	return inst;
}

void instance_wake_waiters(struct instance *inst, int err)
{
	while (inst->waiters) {
		struct instance_waiter *w = inst->waiters;
		inst->waiters = w->next;
		w->cb(w->arg, inst, err);
		free(w);
	}
}

const char *instance_lost_reason(const struct instance *inst)
{
	if (inst->last_error)
		return inst->last_error;
	return inst->stop_why ? inst->stop_why : "the server stopped";
}

json_t *instance_unavailable_error(struct instance *inst, bool sent)
{
	const char *reason = instance_lost_reason(inst);
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

void instance_set_list(struct instance *inst, enum instance_list w,
		       json_t *list)
{
	/* The index first: its keys are the old list's strings. */
	listindex_free(&inst->list_index[w]);
	json_decref(inst->lists[w]);
	inst->lists[w] = list;
	if (list)
		listindex_build(&inst->list_index[w], list, w);
}

void instance_drop_lists(struct instance *inst)
{
	inst->lists_known = false;
	for (int i = 0; i < INSTANCE_NLISTS; i++) {
		instance_set_list(inst, (enum instance_list)i, NULL);
		free(inst->list_error[i]);
		inst->list_error[i] = NULL;
	}
}

void instance_detach_conn(struct instance *inst, bool settles_stop)
{
	struct upstream *up = inst->up;
	if (up == NULL)
		return;
	inst->link->detached = true;
	inst->link->settles_stop = settles_stop;
	inst->up = NULL;
	inst->link = NULL;
	inst->pid = 0;
	inst->ops->stop(up);
}

/* The connection is unusable: fail what waits on it and go to FAILED (or
 * NEEDS_AUTH). The transport closes itself. A failed start drops the
 * lists and counts for the backoff; a connection that dropped after it
 * was ready keeps them (tools kept, reconnects when next used). */
void instance_fail(struct instance *inst, enum instance_state to, char *why)
{
	instance_fail_how(inst, to, why, false);
}

void instance_fail_how(struct instance *inst, enum instance_state to, char *why,
		       bool give_up)
{
	bool was_starting = inst->state == INSTANCE_STARTING;
	bool was_ready = inst->state == INSTANCE_READY;
	instance_save_stderr(inst);
	/* A host shows an error's message and little else: the first line
	 * a failed start printed is usually why (kept apart from the reason,
	 * which status may show where server output must not go). */
	free(inst->fail_line);
	inst->fail_line =
		was_starting ? instance_first_line(inst->stderr_tail) : NULL;
	instance_set_error(inst, why);
	instance_record_failure(inst);
	uv_timer_stop(&inst->startup_timer);
	instance_signin_stop(inst);
	instance_detach_conn(inst, false);
	if (was_starting || to == INSTANCE_NEEDS_AUTH) {
		instance_drop_lists(inst);
		inst->lists_cached = false;
	}
	/* A server that fails to start may have changed its revision: the
	 * next start finds out again. */
	if (was_starting) {
		inst->era_legacy = false;
		inst->era_modern = false;
	}
	/* A server that dies while handling a request that was sent again
	 * after it died before is likely killed by it: that is a failed
	 * start, so the backoff holds the next one, and nothing is queued
	 * for a re-send that would skip it. */
	bool poisoned = instance_resent_in_flight(inst);
	bool keep = was_ready && to == INSTANCE_FAILED && !poisoned && !give_up;
	if (was_starting || poisoned || give_up)
		backoff_fail(&inst->backoff, clock_now_ms());
	instance_set_state(inst, to, inst->last_error);
	instance_fail_pending(inst, keep);
	if (!keep)
		instance_fail_resend(inst);
	instance_wake_waiters(inst, to == INSTANCE_NEEDS_AUTH ? -EACCES : -EIO);
	/* Requests that change nothing were lost with a dropped connection:
	 * they need the server, so it comes back now, once. */
	if (instance_has_queued(inst) && !inst->freeing)
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

/* What a failed open says: the command a stdio server runs, or the
 * transport's error for the rest (a url may hold secrets: not named). */
static char *instance_open_error(struct instance *inst, int rc)
{
	const char *cmd = inst->server.command;
	const struct container_config *cc = inst->server.container;
	/* The engine chosen for an explicit container is the transport's:
	 * docker, else podman. */
	if (cc && rc == -ENOENT)
		return xasprintf("the container engine %s is not installed "
				 "(not found on PATH)",
				 cc->engine ? cc->engine
					    : "(docker or podman)");
	if (inst->server.kind == SERVER_STDIO && cmd != NULL)
		return rc == -ENOENT
			       ? xasprintf("command \"%s\" not found", cmd)
			       : xasprintf("could not start \"%s\": %s", cmd,
					   strerror(-rc));
	return xasprintf("could not open it: %s", strerror(-rc));
}

void instance_start(struct instance *inst)
{
	inst->started_ms = clock_now_ms();
	inst->starts++;
	instance_set_state(inst, INSTANCE_STARTING, NULL);
	if (inst->ops == NULL) {
		instance_fail(inst, INSTANCE_FAILED,
			      xstrdup("servers reached by url are not served "
				      "yet; only stdio servers run"));
		return;
	}
	/* A token about to expire (or refused) is refreshed first: requests
	 * wait for the start, as they do for any. */
	if (instance_signin_before_open(inst))
		return;
	instance_open(inst);
}

void instance_open(struct instance *inst)
{
	int rc = instance_open_upstream(inst);
	if (rc < 0) {
		instance_fail(inst, INSTANCE_FAILED,
			      instance_open_error(inst, rc));
		return;
	}
	/* Its clients may still be catching up with the last one's output. */
	if (inst->reads_paused && inst->ops->pause)
		inst->ops->pause(inst->up, true);
	free(inst->stderr_tail);
	inst->stderr_tail = NULL;
	uv_timer_start(&inst->startup_timer, instance_startup_timeout_cb,
		       inst->startup_timeout_ms, 0);
	json_error_t jerr;
	json_t *caps = json_loads(inst->client_caps_json, 0, &jerr);
	json_t *params = json_pack("{s:s,s:o,s:{s:s,s:s}}", "protocolVersion",
				   MCP_LATEST_VERSION, "capabilities",
				   caps ? caps : json_object(), "clientInfo",
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
	/* A login that just ended (its tokens are stored, the watch of the
	 * token folder has not said so yet) starts it, and cb waits. */
	if (inst->state == INSTANCE_NEEDS_AUTH)
		instance_signin_recheck(inst);
	if (inst->state == INSTANCE_NEEDS_AUTH || inst->freeing) {
		cb(arg, inst, inst->freeing ? -ECANCELED : -EACCES);
		return;
	}
	struct instance_waiter *w = xcalloc(1, sizeof *w);
	w->cb = cb;
	w->arg = arg;
	if (inst->state == INSTANCE_FAILED &&
	    !backoff_allows(&inst->backoff, clock_now_ms())) {
		/* Within the backoff: fail at once, spawn nothing. */
		free(w);
		cb(arg, inst, -EAGAIN);
		return;
	}
	/* Waiters are woken in the order they came, so requests reach the
	 * server in the order the clients sent them. */
	struct instance_waiter **tail = &inst->waiters;
	while (*tail)
		tail = &(*tail)->next;
	*tail = w;
	switch (inst->state) {
	case INSTANCE_FAILED:
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
	instance_signin_stop(inst);
	if (!keep_lists) {
		instance_drop_lists(inst);
		inst->lists_cached = false;
	}
	if (inst->up == NULL) {
		if (inst->state != INSTANCE_STOPPING)
			instance_set_state(inst, INSTANCE_STOPPED, why);
		instance_fail_resend(inst);
		instance_wake_waiters(inst, -ECANCELED);
		return;
	}
	instance_save_stderr(inst);
	instance_set_state(inst, INSTANCE_STOPPING, why);
	instance_set_error(inst, NULL);
	/* What the requests lost here are told: stopped, and why. */
	inst->stop_why = why;
	instance_fail_pending(inst, false);
	instance_fail_resend(inst);
	inst->stop_why = NULL;
	instance_detach_conn(inst, true);
}

void instance_maybe_free(struct instance *inst)
{
	if (!inst->freeing || inst->handles_open > 0)
		return;
	for (int i = 0; i < INSTANCE_NLISTS; i++) {
		instance_set_list(inst, (enum instance_list)i, NULL);
		free(inst->list_error[i]);
	}
	json_decref(inst->caps);
	json_decref(inst->subs);
	free(inst->instructions);
	free(inst->protocol_version);
	free(inst->last_error);
	free(inst->stderr_tail);
	free(inst->fail_reason);
	free(inst->fail_stderr);
	free(inst->fail_line);
	outbox_free(inst->outbox);
	buf_free(&inst->scratch);
	secrets_free(inst->secrets);
	free(inst->name);
	free(inst->key);
	free(inst->public_key);
	free(inst->auth_metadata);
	instance_signin_free(inst);
	config_server_clear(&inst->server);
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
	/* Connections may still hold output it made: the flow stays with
	 * them, without its instance. */
	flow_detach(inst->flow);
	inst->flow = NULL;
	uv_close((uv_handle_t *)&inst->startup_timer, instance_handle_close_cb);
	uv_close((uv_handle_t *)&inst->deadline_timer,
		 instance_handle_close_cb);
	instance_noise_flush(inst);
	uv_close((uv_handle_t *)&inst->noise_timer, instance_handle_close_cb);
	uv_close((uv_handle_t *)&inst->signin_timer, instance_handle_close_cb);
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

uint64_t instance_serial(const struct instance *inst)
{
	return inst->serial;
}

const char *instance_public_key(const struct instance *inst)
{
	return inst->public_key;
}

json_t *instance_list(const struct instance *inst, enum instance_list which)
{
	return inst->lists[which];
}

const struct listindex *instance_list_index(const struct instance *inst,
					    enum instance_list which)
{
	const struct listindex *ix = &inst->list_index[which];
	return listindex_of(ix, inst->lists[which]) ? ix : NULL;
}

const char *instance_list_error(const struct instance *inst,
				enum instance_list which)
{
	return inst->list_error[which];
}

bool instance_lists_failed(const struct instance *inst)
{
	for (int i = 0; i < INSTANCE_NLISTS; i++)
		if (inst->list_error[i])
			return true;
	return false;
}

bool instance_has_capability(const struct instance *inst, const char *cap)
{
	return inst->caps && json_object_get(inst->caps, cap) != NULL;
}

bool instance_speaks_modern(const struct instance *inst)
{
	return inst->protocol_version &&
	       strcmp(inst->protocol_version, MODERN_VERSION) == 0;
}

const char *instance_last_error(const struct instance *inst)
{
	return inst->last_error;
}

const char *instance_failure_line(const struct instance *inst)
{
	return inst->last_error ? inst->fail_line : NULL;
}

pid_t instance_pid(const struct instance *inst)
{
	return inst->pid;
}

unsigned instance_inflight(const struct instance *inst)
{
	return (unsigned)outbox_count_external(inst->outbox);
}

json_t *instance_describe(const struct instance *inst, bool verbose)
{
	json_t *o = json_object();
	json_object_set_new(o, "state",
			    json_string(instance_state_name(inst->state)));
	if (inst->last_error)
		json_object_set_new(o, "error", json_string(inst->last_error));
	if (inst->stderr_tail && inst->stderr_tail[0])
		json_object_set_new(o, "stderr",
				    json_string(inst->stderr_tail));
	else if (inst->up) {
		char *tail = instance_stderr_now(inst);
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
	/* A list that failed (an error, an answer that could not be read, a
	 * bound passed) offers nothing, and says why here. */
	if (instance_lists_failed(inst)) {
		json_t *errs = json_object();
		for (int i = 0; i < INSTANCE_NLISTS; i++)
			if (inst->list_error[i])
				json_object_set_new(
					errs, instance_list_keys[i],
					json_string(inst->list_error[i]));
		json_object_set_new(o, "listErrors", errs);
	}
	json_object_set_new(o, "inflight",
			    json_integer(instance_inflight(inst)));
	/* The resources its clients follow (subs.c), by distinct uri. */
	if (instance_subs_followed(inst))
		json_object_set_new(
			o, "subscriptions",
			json_integer((json_int_t)instance_subs_followed(inst)));
	/* Its clients read slowly: its output waits in its pipe. */
	if (inst->reads_paused)
		json_object_set_new(o, "outputPaused", json_true());
	if (inst->protocol_version)
		json_object_set_new(o, "protocolVersion",
				    json_string(inst->protocol_version));
	if (inst->state == INSTANCE_FAILED && inst->lists[INSTANCE_TOOLS])
		json_object_set_new(
			o, "note",
			json_string("(tools kept; reconnects when next used)"));
	if (inst->lists_cached)
		json_object_set_new(o, "listsFromCache", json_true());
	json_t *lf = instance_last_failure(inst);
	/* Its stderr only in the verbose view: the plain one may be served
	 * where a server's output must not go (status over TCP). */
	if (lf && !verbose)
		json_object_del(lf, "stderr");
	if (lf)
		json_object_set_new(o, "lastFailure", lf);
	uint64_t wait = instance_backoff_remaining_ms(inst);
	if (inst->state == INSTANCE_FAILED && wait > 0)
		json_object_set_new(o, "nextAttemptInMs",
				    json_integer((json_int_t)wait));
	/* NEEDS_AUTH: what the server said, so the user knows where to
	 * get credentials, and the command that signs in when that is the
	 * way. */
	if (inst->state == INSTANCE_NEEDS_AUTH) {
		json_t *auth = json_object();
		if (inst->auth_status > 0)
			json_object_set_new(auth, "status",
					    json_integer(inst->auth_status));
		if (inst->auth_metadata)
			json_object_set_new(auth, "resourceMetadata",
					    json_string(inst->auth_metadata));
		if (instance_signs_in(inst)) {
			char *cmd = xasprintf("mcpvisor login %s", inst->name);
			json_object_set_new(auth, "signIn", json_string(cmd));
			free(cmd);
		}
		if (json_object_size(auth) > 0)
			json_object_set_new(o, "auth", auth);
		else
			json_decref(auth);
	}
	if (verbose) {
		if (inst->pid > 0)
			json_object_set_new(o, "pid", json_integer(inst->pid));
		json_object_set_new(o, "key", json_string(inst->public_key));
	}
	/* The transport's own (transport, url, port, ...), under the
	 * instance's: its keys never replace the state's. */
	if (inst->up && inst->ops->describe) {
		json_t *d = inst->ops->describe(inst->up, verbose);
		json_object_update_missing(o, d);
		json_decref(d);
	} else if (inst->ops) {
		json_object_set_new(o, "transport",
				    json_string(inst->ops->kind));
	}
	return o;
}

uint64_t instance_backoff_remaining_ms(const struct instance *inst)
{
	return backoff_remaining_ms(&inst->backoff, clock_now_ms());
}

bool instance_lists_known(const struct instance *inst)
{
	return inst->lists_known;
}

void instance_set_data(struct instance *inst, void *data)
{
	inst->data = data;
}

void *instance_data(const struct instance *inst)
{
	return inst->data;
}
