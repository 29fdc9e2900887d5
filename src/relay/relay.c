/*
 * The relay's decisions. Host requests get our own ids (the outbox's), so
 * any host id (string or number) maps to one request with one outcome;
 * messages are spliced, not parsed, on the way through (jsonscan finds
 * the id). The resend rule is applied at the moment of loss: what may
 * have reached the runtime and may change something is answered with an
 * error that says so; the rest waits for the next runtime and goes again.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "jsonrpc/outbox.h"
#include "relay/msg.h"
#include "relay/recall.h"
#include "relay/relay.h"
#include "util/clock.h"
#include "util/jsonscan.h"
#include "util/xmalloc.h"

enum relay_state {
	RS_DOWN,       /* no session; the next request recovers */
	RS_RECOVERING, /* ops->recover runs */
	RS_INIT,       /* our own initialize is in flight */
	RS_LIVE,
};

enum rreq_kind {
	RK_HOST,   /* the host's: answered to it */
	RK_INIT,   /* our re-initialize */
	RK_REPLAY, /* setLevel, subscribe again: answer dropped */
	RK_PROBE,  /* a list the host saw, asked of a new runtime */
};

struct rreq {
	struct relay *r;
	enum rreq_kind kind;
	char *host_id; /* raw JSON text of the host's id */
	char *msg;     /* the message with our id */
	size_t len;
	uint64_t wait_from; /* arrival or the loss it waits through */
	uint64_t written;   /* when it went on the current link */
	bool unsent;	    /* mcpc said it never left */
	bool orphan;	    /* its stream ended: decided after a ping */
	bool doomed;	    /* may have run: answered once recovery says why */
	enum relay_list list; /* a first-page list request, else RL_NONE */
};

struct relay {
	const struct relay_ops *ops;
	void *ctx;
	struct outbox *ob;
	enum relay_state state;
	char *init_line; /* the host's initialize, as sent */
	size_t init_len;
	struct replay *replays;
	struct relay_lists lists; /* what the host last saw of each list */
	uint64_t last_life;	  /* last byte or heartbeat from the runtime */
	uint64_t ping_at;	  /* 0: no ping in flight */
	uint64_t lives;		  /* signs of life, counted */
	uint64_t ping_lives;	  /* lives when the ping went */
	uint64_t links;		  /* sessions opened */
	unsigned recoveries;
	bool host_initialized;
	/* A request was refused while others run on this runtime (one
	 * draining for a restart): new ones wait until those end. */
	bool hold;
};

static const char *const msg_keys[] = {"id", "method", "params"};
enum { K_ID, K_METHOD, K_PARAMS, K_N };

/* ---- host output ---- */

static void host_error(struct relay *r, const char *id, int code,
		       const char *text)
{
	size_t n;
	char *s = relay_msg_error(id, code, text, &n);
	r->ops->host_write(r->ctx, s, n);
	free(s);
}

static void host_note(struct relay *r, const char *method)
{
	char *s = xasprintf("{\"jsonrpc\":\"2.0\",\"method\":\"%s\"}", method);
	r->ops->host_write(r->ctx, s, strlen(s));
	free(s);
}

/* ---- requests ---- */

static void rreq_done(void *arg, json_t *response, bool sent)
{
	struct rreq *q = arg;
	free(q->host_id);
	free(q->msg);
	free(q);
}

static struct rreq *rreq_add(struct relay *r, enum rreq_kind kind,
			     const char *method, const char *line, size_t len,
			     const struct jsonscan_span *id_span)
{
	struct rreq *q = xcalloc(1, sizeof *q);
	q->r = r;
	q->kind = kind;
	q->list = RL_NONE;
	q->wait_from = clock_now_ms();
	char ours[24];
	snprintf(ours, sizeof ours, "%lld", (long long)outbox_peek_id(r->ob));
	if (kind == RK_HOST)
		q->host_id = xstrndup(line + id_span->off, id_span->len);
	q->msg = relay_msg_splice(line, len, id_span, ours, &q->len);
	outbox_add(r->ob, method, NULL, kind != RK_HOST, rreq_done, NULL, q);
	return q;
}

/* Let go without an answer (the outbox calls nothing for this). */
static void settle_cancel(struct relay *r, struct outbox_req *o)
{
	struct rreq *q = outbox_req_arg(o);
	outbox_settle(r->ob, o, OUTBOX_CANCELLED, NULL);
	rreq_done(q, NULL, false);
}

static struct outbox_req *req_of(struct relay *r, struct rreq *q)
{
	for (struct outbox_req *o = outbox_first(r->ob); o;
	     o = outbox_next(r->ob, o))
		if (outbox_req_arg(o) == q)
			return o;
	return NULL;
}

static void loss(struct relay *r, enum relay_loss why);

/* Writes a queued request on the link. */
static void send_one(struct relay *r, struct outbox_req *o)
{
	struct rreq *q = outbox_req_arg(o);
	int64_t id = outbox_req_id(o);
	outbox_written(r->ob, o, r->links);
	q->written = clock_now_ms();
	q->unsent = false;
	q->orphan = false;
	if (r->ops->link_send(r->ctx, q->msg, q->len, id) < 0) {
		q->unsent = true;
		loss(r, RELAY_LOSS_REFUSED);
	}
}

static void arm(struct relay *r);

/* Sends every queued host request, oldest first (after the initialize
 * when one is among them). */
static void flush(struct relay *r)
{
	struct outbox_req *o = outbox_first(r->ob), *next;
	for (; o && r->state == RS_LIVE && !r->hold; o = next) {
		next = outbox_next(r->ob, o);
		if (outbox_req_state(o) == OUTBOX_QUEUED)
			send_one(r, o);
	}
	arm(r);
}

/* The host's request is answered with an error, and settled. */
static void answer_error(struct relay *r, struct outbox_req *o, int code,
			 const char *text, enum outbox_outcome how)
{
	struct rreq *q = outbox_req_arg(o);
	if (q->kind == RK_HOST)
		host_error(r, q->host_id, code, text);
	outbox_settle(r->ob, o, how, NULL);
}

/* The resend rule for one request whose answer will not come on this
 * link: false when it was answered with an error instead. */
static const char doomed_text[] =
	"The mcpvisor runtime was lost while this %s was in flight: it may "
	"or may not have taken effect; check before retrying%s%s";

static void answer_doomed(struct relay *r, struct outbox_req *o,
			  const char *why)
{
	char *t = xasprintf(doomed_text, outbox_req_method(o), why ? ". " : "",
			    why ? why : "");
	answer_error(r, o, JR_SERVER_UNAVAILABLE, t, OUTBOX_LOST_SENT);
	free(t);
}

static bool may_resend(struct relay *r, struct outbox_req *o)
{
	struct rreq *q = outbox_req_arg(o);
	if (q->kind != RK_HOST) {
		settle_cancel(r, o);
		return false;
	}
	if (outbox_req_state(o) == OUTBOX_QUEUED || q->unsent ||
	    jr_method_is_idempotent(outbox_req_method(o)))
		return true;
	answer_doomed(r, o, NULL);
	return false;
}

/* The answers owed to requests that may have run, once recovery ended:
 * with its sentence when it failed (what to stop, which port). */
static void settle_doomed(struct relay *r, const char *why)
{
	struct outbox_req *o = outbox_first(r->ob), *next;
	for (; o; o = next) {
		next = outbox_next(r->ob, o);
		struct rreq *q = outbox_req_arg(o);
		if (q->doomed)
			answer_doomed(r, o, why);
	}
}

/* ---- loss and recovery ---- */

static void loss(struct relay *r, enum relay_loss why)
{
	if (r->state == RS_RECOVERING)
		return;
	if (r->state != RS_DOWN)
		r->ops->link_close(r->ctx);
	r->state = RS_RECOVERING;
	r->ping_at = 0;
	r->hold = false;
	r->recoveries++;
	uint64_t now = clock_now_ms();
	struct outbox_req *o = outbox_first(r->ob), *next;
	for (; o; o = next) {
		next = outbox_next(r->ob, o);
		struct rreq *q = outbox_req_arg(o);
		if (q->kind != RK_HOST) {
			settle_cancel(r, o);
			continue;
		}
		/* Decided now, answered when recovery says why it happened:
		 * the host hears what to stop along with it. */
		if (outbox_req_state(o) == OUTBOX_WRITTEN && !q->unsent &&
		    !jr_method_is_idempotent(outbox_req_method(o)))
			q->doomed = true;
		if (outbox_req_state(o) == OUTBOX_WRITTEN)
			outbox_requeue(r->ob, o);
		if (q->wait_from < now)
			q->wait_from = now;
	}
	r->ops->recover(r->ctx, why);
	arm(r);
}

/* Every request of the host's is answered with text; the relay waits for
 * the next request to try again. */
static void fail_all(struct relay *r, const char *text)
{
	if (r->state == RS_INIT || r->state == RS_LIVE)
		r->ops->link_close(r->ctx);
	r->state = RS_DOWN;
	r->ping_at = 0;
	r->hold = false;
	settle_doomed(r, text);
	struct outbox_req *o = outbox_first(r->ob), *next;
	for (; o; o = next) {
		next = outbox_next(r->ob, o);
		answer_error(r, o, JR_SERVER_UNAVAILABLE, text,
			     OUTBOX_LOST_UNSENT);
	}
	arm(r);
}

void relay_recovered(struct relay *r, const char *fail)
{
	if (r->state != RS_RECOVERING)
		return;
	if (fail) {
		fail_all(r, fail);
		return;
	}
	settle_doomed(r, NULL);
	r->links++;
	r->last_life = clock_now_ms();
	if (r->ops->link_open(r->ctx) < 0) {
		fail_all(r, "The mcpvisor runtime was found but a session to "
			    "it could not be opened");
		return;
	}
	/* The host's own initialize, when it waits, opens the session;
	 * otherwise the host initialized an earlier runtime, and this one
	 * gets the same parameters before anything else. */
	bool host_init_waits = false;
	for (struct outbox_req *o = outbox_first(r->ob); o;
	     o = outbox_next(r->ob, o))
		if (strcmp(outbox_req_method(o), "initialize") == 0)
			host_init_waits = true;
	if (host_init_waits || r->init_line == NULL) {
		r->state = RS_LIVE;
		flush(r);
		return;
	}
	r->state = RS_INIT;
	struct jsonscan_span sp[K_N];
	jsonscan_members(r->init_line, r->init_len, msg_keys, K_N, sp);
	struct rreq *q = rreq_add(r, RK_INIT, "initialize", r->init_line,
				  r->init_len, &sp[K_ID]);
	send_one(r, req_of(r, q));
	arm(r);
}

/* Asks the new runtime for a list the host saw; its answer is compared. */
static void probe_list(struct relay *r, enum relay_list l)
{
	char *line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
			       "\"%s\"}",
			       relay_list_method(l));
	size_t len = strlen(line);
	struct jsonscan_span sp[K_N];
	jsonscan_members(line, len, msg_keys, K_N, sp);
	struct rreq *q = rreq_add(r, RK_PROBE, relay_list_method(l), line, len,
				  &sp[K_ID]);
	q->list = l;
	free(line);
	send_one(r, req_of(r, q));
}

/* The answer to our re-initialize: the session is whole again. */
static void reinit_done(struct relay *r, bool ok, const char *msg, size_t len)
{
	if (!ok) {
		fail_all(r, "The new mcpvisor runtime refused to initialize "
			    "the session again");
		return;
	}
	static const char initialized[] = "{\"jsonrpc\":\"2.0\",\"method\":"
					  "\"notifications/initialized\"}";
	r->ops->link_send(r->ctx, initialized, sizeof initialized - 1, 0);
	r->state = RS_LIVE;
	for (struct replay *p = r->replays; p && r->state == RS_LIVE;
	     p = p->next) {
		struct jsonscan_span sp[K_N];
		if (jsonscan_members(p->line, p->len, msg_keys, K_N, sp) < 0)
			continue;
		struct rreq *q = rreq_add(r, RK_REPLAY, "replay", p->line,
					  p->len, &sp[K_ID]);
		send_one(r, req_of(r, q));
	}
	/* The new runtime's lists may differ from what the host saw: each
	 * is asked for again, and the host hears only of those that do. */
	for (int l = 0; l < RL_N && r->state == RS_LIVE; l++)
		if (r->host_initialized && r->lists.seen[l])
			probe_list(r, (enum relay_list)l);
	flush(r);
}

/* Held requests go to the next runtime once the old one has answered
 * what it was running. */
static void hold_check(struct relay *r)
{
	if (r->hold && r->state == RS_LIVE &&
	    outbox_count_written(r->ob, r->links) == 0)
		loss(r, RELAY_LOSS_REFUSED);
}

/* ---- the watch ---- */

static void arm(struct relay *r)
{
	uint64_t at = 0, now = clock_now_ms();
	for (struct outbox_req *o = outbox_first(r->ob); o;
	     o = outbox_next(r->ob, o)) {
		struct rreq *q = outbox_req_arg(o);
		uint64_t t;
		if (r->state == RS_RECOVERING || r->state == RS_DOWN)
			t = q->wait_from + RELAY_RECOVERY_CAP_MS;
		else if (outbox_req_state(o) == OUTBOX_WRITTEN && !r->ping_at)
			t = (q->written > r->last_life ? q->written
						       : r->last_life) +
			    RELAY_SILENCE_MS;
		else
			continue;
		if (at == 0 || t < at)
			at = t;
	}
	if (r->ping_at && (at == 0 || r->ping_at + RELAY_PING_TIMEOUT_MS < at))
		at = r->ping_at + RELAY_PING_TIMEOUT_MS;
	if (at && at < now)
		at = now;
	r->ops->arm(r->ctx, at);
}

static void ping_start(struct relay *r)
{
	if (r->ping_at)
		return;
	r->ping_at = clock_now_ms();
	r->ping_lives = r->lives;
	if (r->ping_at == 0)
		r->ping_at = 1;
	r->ops->ping(r->ctx);
}

static void life(struct relay *r)
{
	r->lives++;
	r->last_life = clock_now_ms();
}

void relay_ping_done(struct relay *r, bool answered)
{
	if (r->ping_at == 0)
		return;
	/* An answer or heartbeat that came while the ping was out counts
	 * as one. */
	if (r->lives != r->ping_lives)
		answered = true;
	r->ping_at = 0;
	if (!answered) {
		loss(r, RELAY_LOSS_SILENT);
		return;
	}
	life(r);
	/* A stream that ended while the runtime lives: its requests go
	 * again or are answered by the resend rule, one by one. */
	struct outbox_req *o = outbox_first(r->ob), *next;
	for (; o; o = next) {
		next = outbox_next(r->ob, o);
		struct rreq *q = outbox_req_arg(o);
		if (q->orphan && may_resend(r, o)) {
			outbox_requeue(r->ob, o);
			if (r->state == RS_LIVE && !r->hold)
				send_one(r, o);
		}
	}
	hold_check(r);
	arm(r);
}

void relay_tick(struct relay *r)
{
	uint64_t now = clock_now_ms();
	if (r->ping_at && now >= r->ping_at + RELAY_PING_TIMEOUT_MS) {
		relay_ping_done(r, false);
		now = clock_now_ms();
	}
	if (r->state == RS_RECOVERING || r->state == RS_DOWN) {
		struct outbox_req *o = outbox_first(r->ob), *next;
		for (; o; o = next) {
			next = outbox_next(r->ob, o);
			struct rreq *q = outbox_req_arg(o);
			if (q->kind != RK_HOST ||
			    now < q->wait_from + RELAY_RECOVERY_CAP_MS)
				continue;
			if (q->doomed)
				answer_doomed(r, o, NULL);
			else
				answer_error(r, o, JR_SERVER_UNAVAILABLE,
					     "The mcpvisor runtime is still "
					     "starting again; retry in a few "
					     "seconds",
					     OUTBOX_LOST_UNSENT);
		}
	} else if (r->ping_at == 0) {
		for (struct outbox_req *o = outbox_first(r->ob); o;
		     o = outbox_next(r->ob, o)) {
			struct rreq *q = outbox_req_arg(o);
			uint64_t from = q->written > r->last_life
						? q->written
						: r->last_life;
			if (outbox_req_state(o) == OUTBOX_WRITTEN &&
			    now >= from + RELAY_SILENCE_MS) {
				ping_start(r);
				break;
			}
		}
	}
	arm(r);
}

/* ---- from the runtime ---- */

void relay_link_heartbeat(struct relay *r)
{
	life(r);
}

void relay_link_message(struct relay *r, const char *msg, size_t len,
			int64_t related)
{
	life(r);
	struct jsonscan_span sp[K_N];
	if (jsonscan_members(msg, len, msg_keys, K_N, sp) < 0)
		return;
	long long id = 0;
	if (sp[K_METHOD].len || !jsonscan_int(msg, &sp[K_ID], &id)) {
		/* The server's own request or notification: the host's. */
		r->ops->host_write(r->ctx, msg, len);
		return;
	}
	struct outbox_req *o = outbox_find(r->ob, id);
	if (o == NULL)
		return;
	struct rreq *q = outbox_req_arg(o);
	if (q->kind == RK_HOST) {
		size_t n;
		char *s = relay_msg_splice(msg, len, &sp[K_ID], q->host_id, &n);
		r->ops->host_write(r->ctx, s, n);
		free(s);
		if (q->list != RL_NONE)
			relay_lists_seen(&r->lists, q->list, msg, len);
		outbox_settle(r->ob, o, OUTBOX_ANSWERED, NULL);
	} else {
		bool ok = q->kind != RK_INIT ||
			  memmem(msg, len, "\"result\"", 8) != NULL;
		enum rreq_kind kind = q->kind;
		enum relay_list list = q->list;
		outbox_settle(r->ob, o, OUTBOX_ANSWERED, NULL);
		if (kind == RK_INIT)
			reinit_done(r, ok, msg, len);
		else if (kind == RK_PROBE &&
			 relay_lists_changed(&r->lists, list, msg, len))
			host_note(r, relay_list_changed(list));
	}
	hold_check(r);
	arm(r);
}

void relay_link_lost(struct relay *r, int64_t id, bool sent)
{
	struct outbox_req *o = outbox_find(r->ob, id);
	if (o == NULL)
		return;
	struct rreq *q = outbox_req_arg(o);
	if (!sent) {
		/* It never reached the runtime: refused or unreachable. Calls
		 * still running there (a drain lets them finish) are waited
		 * for; then the runtime is lost. */
		q->unsent = true;
		if (r->state != RS_LIVE) {
			loss(r, RELAY_LOSS_REFUSED);
			return;
		}
		if (outbox_req_state(o) == OUTBOX_WRITTEN)
			outbox_requeue(r->ob, o);
		r->hold = true;
		hold_check(r);
		arm(r);
		return;
	}
	/* Its stream ended with no answer: a runtime that still answers a
	 * ping lost only this stream; one that does not is lost. */
	q->orphan = true;
	ping_start(r);
	arm(r);
}

void relay_link_fault(struct relay *r, enum relay_fault f, const char *text)
{
	if (r->state != RS_INIT && r->state != RS_LIVE)
		return;
	if (f == RELAY_FAULT_AUTH) {
		/* Never a restart: the runtime is fine, the relay lacks a
		 * key. */
		fail_all(r, "The mcpvisor runtime asks for a credential "
			    "(HTTP 401): set MCPVISOR_API_KEY in the relay's "
			    "environment, or let the relay reach the runtime "
			    "through its Unix socket (no --url)");
		return;
	}
	if (f == RELAY_FAULT_EXPIRED) {
		/* The runtime forgot the session (idle timeout, or a new
		 * runtime on the same socket): nothing is wrong with it. The
		 * one request that heard the 404 never ran. */
		struct outbox_req *only = NULL;
		size_t n = 0;
		for (struct outbox_req *o = outbox_first(r->ob); o;
		     o = outbox_next(r->ob, o))
			if (outbox_req_state(o) == OUTBOX_WRITTEN && ++n == 1)
				only = o;
		if (n == 1)
			((struct rreq *)outbox_req_arg(only))->unsent = true;
		loss(r, RELAY_LOSS_NONE);
		return;
	}
	loss(r,
	     f == RELAY_FAULT_REFUSED ? RELAY_LOSS_REFUSED : RELAY_LOSS_STREAM);
}

/* ---- from the host ---- */

/* notifications/cancelled from the host names its id: ours goes on. */
static void host_cancel(struct relay *r, const char *line, size_t len)
{
	json_t *m = json_loadb(line, len, 0, NULL);
	json_t *rid = json_object_get(jr_params(m), "requestId");
	char *want =
		rid ? json_dumps(rid, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	json_decref(m);
	if (want == NULL)
		return;
	for (struct outbox_req *o = outbox_first(r->ob); o;
	     o = outbox_next(r->ob, o)) {
		struct rreq *q = outbox_req_arg(o);
		if (q->kind != RK_HOST || strcmp(q->host_id, want) != 0)
			continue;
		int64_t id = outbox_req_id(o);
		if (outbox_req_state(o) == OUTBOX_WRITTEN &&
		    r->state == RS_LIVE) {
			char *s = xasprintf(
				"{\"jsonrpc\":\"2.0\",\"method\":"
				"\"notifications/cancelled\",\"params\":{"
				"\"requestId\":%lld}}",
				(long long)id);
			r->ops->link_send(r->ctx, s, strlen(s), 0);
			free(s);
			r->ops->link_forget(r->ctx, id);
		}
		settle_cancel(r, o);
		break;
	}
	free(want);
	hold_check(r);
}

void relay_host_garbage(struct relay *r, const char *what)
{
	char *t = xasprintf("Parse error: %s", what);
	host_error(r, NULL, JR_PARSE_ERROR, t);
	free(t);
}

void relay_host_line(struct relay *r, const char *line, size_t len)
{
	struct jsonscan_span sp[K_N];
	size_t i = 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i < len && line[i] == '[') {
		host_error(r, NULL, JR_INVALID_REQUEST,
			   "Invalid Request: batches are not supported");
		return;
	}
	if (jsonscan_members_strict(line, len, msg_keys, K_N, sp) < 0) {
		host_error(r, NULL, JR_PARSE_ERROR,
			   "Parse error: the line is not one JSON object");
		return;
	}
	char method[JR_MAX_METHOD];
	method[0] = '\0';
	if (sp[K_METHOD].len) {
		const char *m = line + sp[K_METHOD].off;
		size_t n = sp[K_METHOD].len;
		if (m[0] != '"' || n < 2 || n - 2 >= sizeof method ||
		    memchr(m, '\\', n)) {
			host_error(r, NULL, JR_INVALID_REQUEST,
				   "Invalid Request: bad method");
			return;
		}
		memcpy(method, m + 1, n - 2);
		method[n - 2] = '\0';
	}
	if (method[0] == '\0') {
		/* The host's answer to a server request: the runtime's. */
		if (sp[K_ID].len && r->state == RS_LIVE)
			r->ops->link_send(r->ctx, line, len, 0);
		return;
	}
	if (sp[K_ID].len == 0) {
		if (strcmp(method, "notifications/cancelled") == 0) {
			host_cancel(r, line, len);
			return;
		}
		if (strcmp(method, "notifications/initialized") == 0)
			r->host_initialized = true;
		/* Notifications in a gap between runtimes are dropped: the
		 * next runtime gets a fresh session. */
		if (r->state == RS_LIVE)
			r->ops->link_send(r->ctx, line, len, 0);
		return;
	}
	if (line[sp[K_ID].off] != '"' &&
	    (line[sp[K_ID].off] < '0' || line[sp[K_ID].off] > '9') &&
	    line[sp[K_ID].off] != '-') {
		host_error(r, NULL, JR_INVALID_REQUEST,
			   "Invalid Request: id must be a string or number");
		return;
	}
	if (strcmp(method, "initialize") == 0) {
		free(r->init_line);
		r->init_line = xstrndup(line, len);
		r->init_len = len;
	}
	recall_keep(&r->replays, method, line, len, &sp[K_PARAMS]);
	struct rreq *q = rreq_add(r, RK_HOST, method, line, len, &sp[K_ID]);
	q->list = relay_list_of(method, line, &sp[K_PARAMS]);
	if (r->state == RS_LIVE && !r->hold) {
		send_one(r, req_of(r, q));
		arm(r);
	} else if (r->state == RS_DOWN) {
		loss(r, RELAY_LOSS_NONE);
	}
}

/* ---- life ---- */

struct relay *relay_new(const struct relay_ops *ops, void *ctx)
{
	struct relay *r = xcalloc(1, sizeof *r);
	r->ops = ops;
	r->ctx = ctx;
	r->ob = outbox_new();
	r->state = RS_DOWN;
	return r;
}

void relay_start(struct relay *r)
{
	loss(r, RELAY_LOSS_NONE);
	r->recoveries = 0;
}

void relay_free(struct relay *r)
{
	if (r == NULL)
		return;
	if (r->state == RS_INIT || r->state == RS_LIVE)
		r->ops->link_close(r->ctx);
	struct outbox_req *o = outbox_first(r->ob), *next;
	for (; o; o = next) {
		next = outbox_next(r->ob, o);
		outbox_settle(r->ob, o, OUTBOX_LOST_UNSENT, NULL);
	}
	outbox_free(r->ob);
	recall_free(r->replays);
	free(r->init_line);
	free(r);
}

size_t relay_pending(const struct relay *r)
{
	return outbox_count_external(r->ob);
}

unsigned relay_recoveries(const struct relay *r)
{
	return r->recoveries;
}

bool relay_live(const struct relay *r)
{
	return r->state == RS_LIVE;
}
