/*
 * The relay's decisions. Host requests get our own ids (the outbox's), so
 * any host id (string or number) maps to one request with one outcome;
 * messages are spliced, not parsed, on the way through (jsonscan finds
 * the id). What is known of a request whose answer will not come (a fact
 * from mcpc, or the loss of the runtime) goes to the outbox's rule, which
 * decides: send it again, or answer it. An answer that a request may or
 * may not have run waits for the recovery, so the host hears why along
 * with it. Every walk over the outbox goes by a snapshot of ids: a step
 * may settle any request.
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
#include "relay/relay_int.h"
#include "util/clock.h"
#include "util/jsonscan.h"
#include "util/xmalloc.h"

/* Our initialize of a new runtime lost this many times in a row (the
 * runtime answers pings): the runtime is lost. */
#define RELAY_INIT_TRIES 3

/* ---- host output ---- */

void relay_host_error(struct relay *r, const char *id, int code,
		      const char *text)
{
	size_t n;
	char *s = relay_msg_error(id, code, text, &n);
	r->ops->host_write(r->ctx, s, n);
	free(s);
}

static void relay_host_note(struct relay *r, const char *method)
{
	char *s = xasprintf("{\"jsonrpc\":\"2.0\",\"method\":\"%s\"}", method);
	r->ops->host_write(r->ctx, s, strlen(s));
	free(s);
}

/* ---- requests ---- */

static void relay_req_done(void *arg, json_t *response, bool sent)
{
	struct rreq *q = arg;
	struct relay *r = q->r;
	bool host = q->kind == RK_HOST;
	if (q->kind == RK_LISTEN && q->listen)
		q->listen->ours = 0;
	free(q->host_id);
	free(q);
	if (host && outbox_count_external(r->ob) == 0 && r->ops->settled)
		r->ops->settled(r->ctx);
}

struct outbox_req *relay_req_add(struct relay *r, enum rreq_kind kind,
				 const char *method, const char *line,
				 size_t len,
				 const struct jsonscan_span *id_span)
{
	struct rreq *q = xcalloc(1, sizeof *q);
	q->r = r;
	q->kind = kind;
	q->list = RL_NONE;
	q->owed = OUTBOX_RESEND;
	q->wait_from = clock_now_ms();
	char ours[24];
	relay_msg_id(ours, outbox_peek_id(r->ob));
	if (kind == RK_HOST)
		q->host_id = xstrndup(line + id_span->off, id_span->len);
	/* The message with our id: what is written, and written again (the
	 * outbox keeps its own copy; a common call is spliced on the
	 * stack). */
	char small[4096];
	size_t n;
	char *msg = relay_msg_splice_in(line, len, id_span, ours, small,
					sizeof small, &n);
	struct outbox_req *o = outbox_add(r->ob, method, NULL, kind != RK_HOST,
					  relay_req_done, NULL, q);
	outbox_req_set_msg(o, msg, n);
	if (msg != small)
		free(msg);
	return o;
}

/* Let go without an answer (the outbox calls nothing for this). */
void relay_req_cancel(struct relay *r, struct outbox_req *o)
{
	struct rreq *q = outbox_req_arg(o);
	outbox_settle(r->ob, o, OUTBOX_CANCELLED, NULL);
	relay_req_done(q, NULL, false);
}

/* The host's request is answered with an error, and settled. */
static void relay_answer_error(struct relay *r, struct outbox_req *o, int code,
			       const char *text)
{
	struct rreq *q = outbox_req_arg(o);
	struct rlisten *rl = q->kind == RK_LISTEN ? q->listen : NULL;
	if (q->kind == RK_HOST)
		relay_host_error(r, q->host_id, code, text);
	outbox_settle(r->ob, o,
		      outbox_req_reached(o) > 0 ? OUTBOX_LOST_SENT
						: OUTBOX_LOST_UNSENT,
		      NULL);
	/* A listen's request failing ends the host's listen with it. */
	if (rl)
		relay_listen_fail_of(r, rl, code, text);
}

/* The answer the rule's verdict v owes request o, with why the runtime
 * was lost (NULL: not known). */
static void relay_answer_verdict(struct relay *r, struct outbox_req *o,
				 enum outbox_verdict v, const char *why)
{
	char *t;
	if (v == OUTBOX_FAIL_MAYBE)
		t = xasprintf("The mcpvisor runtime was lost while this %s was "
			      "in flight: it may or may not have taken "
			      "effect; check before retrying%s%s",
			      outbox_req_method(o), why ? ". " : "",
			      why ? why : "");
	else
		t = xasprintf("The mcpvisor runtime was lost while this %s was "
			      "in flight, and it is not sent again%s%s",
			      outbox_req_method(o), why ? ". " : "",
			      why ? why : "");
	relay_answer_error(r, o, JR_SERVER_UNAVAILABLE, t);
	free(t);
}

/* Writes a queued request on the link, as the rule allows. */
void relay_req_send(struct relay *r, struct outbox_req *o)
{
	struct rreq *q = outbox_req_arg(o);
	if (!outbox_may_write(o)) {
		relay_answer_verdict(r, o, OUTBOX_FAIL_MAYBE, NULL);
		return;
	}
	int64_t id = outbox_req_id(o);
	size_t len;
	const char *msg = outbox_req_msg(o, &len);
	outbox_written(r->ob, o, r->links);
	q->written = clock_now_ms();
	q->orphan = false;
	int rc = q->modern ? r->ops->link_send_modern(r->ctx, msg, len, id)
			   : r->ops->link_send(r->ctx, msg, len, id);
	if (rc == 0)
		return;
	if (rc == -EINVAL && q->modern) {
		/* Its version claim is no version (mcpc reads the header
		 * from it): this request's fault, not the runtime's. */
		outbox_judge(r->ob, o, OUTBOX_UNWRITTEN);
		relay_answer_error(r, o, JR_INVALID_PARAMS,
				   "Invalid params: _meta's "
				   "io.modelcontextprotocol/protocolVersion "
				   "is not a version; it was not sent");
		return;
	}
	if (rc == -EMSGSIZE) {
		/* Too large for the link (our longer id spliced in): this
		 * request's fault, not the runtime's. */
		outbox_judge(r->ob, o, OUTBOX_UNWRITTEN);
		relay_answer_error(r, o, JR_INVALID_REQUEST,
				   "Invalid Request: the message is too large "
				   "for the mcpvisor runtime; it was not sent");
		return;
	}
	/* Nothing left: the session to the runtime is gone. */
	if (outbox_judge(r->ob, o, OUTBOX_UNWRITTEN) != OUTBOX_RESEND)
		relay_answer_error(r, o, JR_SERVER_UNAVAILABLE,
				   "The mcpvisor runtime could not be reached "
				   "to send this request");
	relay_loss(r, RELAY_LOSS_REFUSED);
}

/* A 2025 request needs the session initialized on this runtime; a
 * modern one carries all it needs (its _meta), so it never waits for our
 * initialize (a modern host never sends one). */
bool relay_may_send(const struct relay *r, bool modern)
{
	return !r->hold &&
	       (r->state == RS_LIVE || (modern && r->state == RS_INIT));
}

/* Sends every queued host request, oldest first (after the initialize
 * when one is among them). */
static bool relay_flush_step(void *arg, struct outbox_req *o)
{
	struct relay *r = arg;
	if (!relay_may_send(r, true))
		return false;
	struct rreq *q = outbox_req_arg(o);
	if (outbox_req_state(o) == OUTBOX_QUEUED &&
	    relay_may_send(r, q->modern))
		relay_req_send(r, o);
	return true;
}

/* The host's listens go first on a new link: they are its oldest. */
static void relay_flush(struct relay *r)
{
	relay_listens_resume(r);
	outbox_each(r->ob, relay_flush_step, r);
	relay_arm(r);
}

/* The answers owed to requests the rule gave up on at a loss, once
 * recovery ended: with its sentence when it failed (what to stop, which
 * port). */
struct relay_walk {
	struct relay *r;
	const char *why; /* the sentence answers carry, or NULL */
	uint64_t now;
};

static bool relay_owed_step(void *arg, struct outbox_req *o)
{
	struct relay_walk *w = arg;
	struct rreq *q = outbox_req_arg(o);
	if (q->owed != OUTBOX_RESEND)
		relay_answer_verdict(w->r, o, q->owed, w->why);
	return true;
}

static void relay_settle_owed(struct relay *r, const char *why)
{
	struct relay_walk w = {.r = r, .why = why};
	outbox_each(r->ob, relay_owed_step, &w);
}

/* ---- loss and recovery ---- */

/* One request at the loss of the runtime: ours go with the session; the
 * host's are judged now and answered when recovery says why it happened
 * (the host hears what to stop along with it). */
static bool relay_loss_step(void *arg, struct outbox_req *o)
{
	struct relay_walk *w = arg;
	struct rreq *q = outbox_req_arg(o);
	if (q->kind != RK_HOST) {
		/* A listen's goes too: the host's listen waits for the
		 * next runtime (relay_listens_resume). */
		relay_req_cancel(w->r, o);
		return true;
	}
	if (outbox_req_state(o) == OUTBOX_WRITTEN) {
		enum outbox_verdict v = outbox_judge(w->r->ob, o, OUTBOX_CUT);
		if (v != OUTBOX_RESEND) {
			q->owed = v;
			outbox_requeue(w->r->ob, o);
		}
	}
	if (q->wait_from < w->now)
		q->wait_from = w->now;
	return true;
}

void relay_loss(struct relay *r, enum relay_loss why)
{
	if (r->state == RS_RECOVERING)
		return;
	if (r->state != RS_DOWN)
		r->ops->link_close(r->ctx);
	r->state = RS_RECOVERING;
	r->ping_at = 0;
	r->hold = false;
	r->recoveries++;
	struct relay_walk w = {.r = r, .now = clock_now_ms()};
	outbox_each(r->ob, relay_loss_step, &w);
	relay_listens_lost(r, w.now);
	r->ops->recover(r->ctx, why);
	relay_arm(r);
}

static bool relay_fail_step(void *arg, struct outbox_req *o)
{
	struct relay_walk *w = arg;
	/* One written now may have run: the rule says what to tell (a
	 * listen changes nothing). */
	struct rreq *q = outbox_req_arg(o);
	if (q->kind != RK_LISTEN && outbox_req_state(o) == OUTBOX_WRITTEN &&
	    outbox_rule(o, OUTBOX_ENDING) == OUTBOX_FAIL_MAYBE)
		relay_answer_verdict(w->r, o, OUTBOX_FAIL_MAYBE, w->why);
	else
		relay_answer_error(w->r, o, JR_SERVER_UNAVAILABLE, w->why);
	return true;
}

/* Every request of the host's is answered with text; the relay waits for
 * the next request to try again. */
static void relay_fail_all(struct relay *r, const char *text)
{
	if (r->state == RS_INIT || r->state == RS_LIVE)
		r->ops->link_close(r->ctx);
	r->state = RS_DOWN;
	r->ping_at = 0;
	r->hold = false;
	relay_settle_owed(r, text);
	struct relay_walk w = {.r = r, .why = text};
	outbox_each(r->ob, relay_fail_step, &w);
	relay_listens_fail(r, text);
	relay_arm(r);
}

/* Sends our initialize of the host's session to the runtime. */
static void relay_init_send(struct relay *r)
{
	r->state = RS_INIT;
	struct jsonscan_span sp[K_N];
	jsonscan_members(r->init_line, r->init_len, relay_msg_keys, K_N, sp);
	struct outbox_req *o = relay_req_add(
		r, RK_INIT, "initialize", r->init_line, r->init_len, &sp[K_ID]);
	relay_req_send(r, o);
	/* Modern requests and listens do not wait for it. */
	if (r->state == RS_INIT)
		relay_flush(r);
	else
		relay_arm(r);
}

/* Our initialize's answer will not come though the runtime lives: ask
 * again, a few times; then the runtime is lost. Never left waiting. */
static void relay_init_lost(struct relay *r, struct outbox_req *o)
{
	relay_req_cancel(r, o);
	if (r->state != RS_INIT)
		return;
	if (++r->init_tries >= RELAY_INIT_TRIES) {
		relay_loss(r, RELAY_LOSS_STREAM);
		return;
	}
	relay_init_send(r);
}

void relay_recovered(struct relay *r, const char *fail)
{
	if (r->state != RS_RECOVERING)
		return;
	if (fail) {
		relay_fail_all(r, fail);
		return;
	}
	relay_settle_owed(r, NULL);
	r->links++;
	r->last_life = clock_now_ms();
	if (r->ops->link_open(r->ctx) < 0) {
		relay_fail_all(r, "The mcpvisor runtime was found but a "
				  "session to it could not be opened");
		return;
	}
	/* The host's own initialize, when it waits, opens the session;
	 * otherwise the host initialized an earlier runtime, and this one
	 * gets the same parameters before anything else. */
	bool host_init_waits = false;
	for (struct outbox_req *o = outbox_first(r->ob); o;
	     o = outbox_next(r->ob, o))
		if (strcmp(outbox_req_method(o), "initialize") == 0 &&
		    !((struct rreq *)outbox_req_arg(o))->modern)
			host_init_waits = true;
	if (host_init_waits || r->init_line == NULL) {
		r->state = RS_LIVE;
		relay_flush(r);
		return;
	}
	r->init_tries = 0;
	relay_init_send(r);
}

/* Asks the new runtime for a list the host saw; its answer is compared. */
static void relay_probe_list(struct relay *r, enum relay_list l)
{
	char *line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
			       "\"%s\"}",
			       relay_list_method(l));
	size_t len = strlen(line);
	struct jsonscan_span sp[K_N];
	jsonscan_members(line, len, relay_msg_keys, K_N, sp);
	struct outbox_req *o = relay_req_add(r, RK_PROBE, relay_list_method(l),
					     line, len, &sp[K_ID]);
	((struct rreq *)outbox_req_arg(o))->list = l;
	free(line);
	relay_req_send(r, o);
}

/* The answer to our re-initialize: the session is whole again. */
static void relay_reinit_done(struct relay *r, bool ok)
{
	if (!ok) {
		relay_fail_all(r, "The new mcpvisor runtime refused to "
				  "initialize the session again");
		return;
	}
	static const char initialized[] = "{\"jsonrpc\":\"2.0\",\"method\":"
					  "\"notifications/initialized\"}";
	r->ops->link_send(r->ctx, initialized, sizeof initialized - 1, 0);
	r->state = RS_LIVE;
	r->init_tries = 0;
	for (struct replay *p = r->replays; p && r->state == RS_LIVE;
	     p = p->next) {
		struct jsonscan_span sp[K_N];
		if (jsonscan_members(p->line, p->len, relay_msg_keys, K_N, sp) <
		    0)
			continue;
		relay_req_send(r, relay_req_add(r, RK_REPLAY, "replay", p->line,
						p->len, &sp[K_ID]));
	}
	/* The new runtime's lists may differ from what the host saw: each
	 * is asked for again, and the host hears only of those that do. */
	for (int l = 0; l < RL_N && r->state == RS_LIVE; l++)
		if (r->host_initialized && r->lists.seen[l])
			relay_probe_list(r, (enum relay_list)l);
	relay_flush(r);
}

/* Held requests go to the next runtime once the old one has answered
 * what it was running. */
void relay_hold_check(struct relay *r)
{
	if (r->hold && r->state == RS_LIVE &&
	    outbox_count_written(r->ob, r->links) ==
		    relay_listens_written(r, r->links))
		relay_loss(r, RELAY_LOSS_REFUSED);
}

/* ---- the watch ---- */

void relay_arm(struct relay *r)
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
	uint64_t lc = r->state == RS_RECOVERING || r->state == RS_DOWN
			      ? relay_listens_next_cap(r)
			      : 0;
	if (lc && (at == 0 || lc < at))
		at = lc;
	if (r->ping_at && (at == 0 || r->ping_at + RELAY_PING_TIMEOUT_MS < at))
		at = r->ping_at + RELAY_PING_TIMEOUT_MS;
	if (at && at < now)
		at = now;
	r->ops->arm(r->ctx, at);
}

static void relay_ping_start(struct relay *r)
{
	if (r->ping_at)
		return;
	r->ping_at = clock_now_ms();
	r->ping_lives = r->lives;
	if (r->ping_at == 0)
		r->ping_at = 1;
	r->ops->ping(r->ctx);
}

static void relay_life(struct relay *r)
{
	r->lives++;
	r->last_life = clock_now_ms();
}

/* A request whose stream ended while the runtime lives (it answered a
 * ping): the rule sends it again or answers it now. */
static void relay_orphan(struct relay *r, struct outbox_req *o)
{
	struct rreq *q = outbox_req_arg(o);
	q->orphan = false;
	if (q->kind == RK_INIT) {
		relay_init_lost(r, o);
		return;
	}
	if (q->kind == RK_LISTEN) {
		relay_listen_cut(r, o);
		return;
	}
	enum outbox_verdict v = outbox_judge(r->ob, o, OUTBOX_CUT);
	if (q->kind != RK_HOST) {
		relay_req_cancel(r, o);
		return;
	}
	if (v != OUTBOX_RESEND)
		relay_answer_verdict(r, o, v, NULL);
	else if (r->state == RS_LIVE && !r->hold)
		relay_req_send(r, o);
}

static bool relay_orphan_step(void *arg, struct outbox_req *o)
{
	struct relay *r = arg;
	if (r->state == RS_RECOVERING)
		return false;
	if (((struct rreq *)outbox_req_arg(o))->orphan)
		relay_orphan(r, o);
	return true;
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
		relay_loss(r, RELAY_LOSS_SILENT);
		return;
	}
	relay_life(r);
	outbox_each(r->ob, relay_orphan_step, r);
	relay_hold_check(r);
	relay_arm(r);
}

/* A host request that waited for a recovery past the host's patience is
 * answered: what is owed, or that the runtime is still coming. */
static bool relay_cap_step(void *arg, struct outbox_req *o)
{
	struct relay_walk *w = arg;
	struct rreq *q = outbox_req_arg(o);
	if (q->kind != RK_HOST || w->now < q->wait_from + RELAY_RECOVERY_CAP_MS)
		return true;
	if (q->owed != OUTBOX_RESEND)
		relay_answer_verdict(w->r, o, q->owed, NULL);
	else
		relay_answer_error(w->r, o, JR_SERVER_UNAVAILABLE,
				   "The mcpvisor runtime is still starting "
				   "again; retry in a few seconds");
	return true;
}

void relay_tick(struct relay *r)
{
	uint64_t now = clock_now_ms();
	if (r->ping_at && now >= r->ping_at + RELAY_PING_TIMEOUT_MS) {
		relay_ping_done(r, false);
		now = clock_now_ms();
	}
	if (r->state == RS_RECOVERING || r->state == RS_DOWN) {
		struct relay_walk w = {.r = r, .now = now};
		outbox_each(r->ob, relay_cap_step, &w);
		relay_listens_cap(r, now);
	} else if (r->ping_at == 0) {
		for (struct outbox_req *o = outbox_first(r->ob); o;
		     o = outbox_next(r->ob, o)) {
			struct rreq *q = outbox_req_arg(o);
			uint64_t from = q->written > r->last_life
						? q->written
						: r->last_life;
			if (outbox_req_state(o) == OUTBOX_WRITTEN &&
			    now >= from + RELAY_SILENCE_MS) {
				relay_ping_start(r);
				break;
			}
		}
	}
	relay_arm(r);
}

/* ---- from the runtime ---- */

void relay_link_heartbeat(struct relay *r)
{
	relay_life(r);
}

void relay_link_message(struct relay *r, const char *msg, size_t len,
			int64_t related)
{
	relay_life(r);
	struct jsonscan_span sp[K_N];
	if (jsonscan_members(msg, len, relay_msg_keys, K_N, sp) < 0)
		return;
	struct outbox_req *lo =
		related > 0 ? outbox_find(r->ob, related) : NULL;
	if (lo && ((struct rreq *)outbox_req_arg(lo))->kind == RK_LISTEN) {
		relay_listen_message(r, lo, msg, len);
		relay_hold_check(r);
		relay_arm(r);
		return;
	}
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
		/* host_write copies what stdout does not take at once. */
		char small[4096];
		size_t n;
		char *s = relay_msg_splice_in(msg, len, &sp[K_ID], q->host_id,
					      small, sizeof small, &n);
		r->ops->host_write(r->ctx, s, n);
		if (s != small)
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
			relay_reinit_done(r, ok);
		else if (kind == RK_PROBE &&
			 relay_lists_changed(&r->lists, list, msg, len))
			relay_host_note(r, relay_list_changed(list));
	}
	relay_hold_check(r);
	relay_arm(r);
}

/* A fact that proves request o never ran (it was not written, or the
 * runtime refused it unprocessed): false when it was answered instead
 * of being kept for a re-send. */
static bool relay_unrun(struct relay *r, struct outbox_req *o,
			enum outbox_fact f)
{
	struct rreq *q = outbox_req_arg(o);
	enum outbox_verdict v = outbox_judge(r->ob, o, f);
	/* Ours go with the session (an initialize is sent again by the
	 * recovery that follows). */
	if (q->kind != RK_HOST) {
		relay_req_cancel(r, o);
		return false;
	}
	if (v == OUTBOX_RESEND)
		return true;
	relay_answer_verdict(r, o, v, NULL);
	return false;
}

void relay_link_lost(struct relay *r, int64_t id, enum outbox_fact f)
{
	struct outbox_req *o = outbox_find(r->ob, id);
	if (o == NULL || outbox_req_state(o) != OUTBOX_WRITTEN)
		return;
	if (f == OUTBOX_CUT &&
	    ((struct rreq *)outbox_req_arg(o))->kind == RK_LISTEN) {
		/* A listen's stream ending says nothing of the calls in
		 * flight (a draining runtime ends it, and refuses the ping's
		 * connection while it answers them): listened again at once;
		 * a runtime that is gone refuses that, which is a fact. */
		relay_listen_cut(r, o);
		relay_hold_check(r);
		relay_arm(r);
		return;
	}
	if (f == OUTBOX_CUT) {
		/* Its stream ended with no answer: a runtime that still
		 * answers a ping lost only this stream; one that does not is
		 * lost. */
		((struct rreq *)outbox_req_arg(o))->orphan = true;
		relay_ping_start(r);
		relay_arm(r);
		return;
	}
	/* It never ran there: refused or unreachable. Calls still running
	 * there (a drain lets them finish) are waited for; then the runtime
	 * is lost. */
	relay_unrun(r, o, f);
	if (r->state == RS_RECOVERING)
		return;
	if (r->state != RS_LIVE) {
		relay_loss(r, RELAY_LOSS_REFUSED);
		return;
	}
	r->hold = true;
	relay_hold_check(r);
	relay_arm(r);
}

void relay_link_fault(struct relay *r, enum relay_fault f, const char *text,
		      const struct outbox_fact_of *facts, size_t nfacts)
{
	if (r->state != RS_INIT && r->state != RS_LIVE)
		return;
	/* What mcpc knew of our requests: a POST the runtime refused
	 * unprocessed (the 404 it answered), messages it never sent. */
	for (size_t i = 0; i < nfacts; i++) {
		struct outbox_req *o = outbox_find(r->ob, facts[i].id);
		if (o && outbox_req_state(o) == OUTBOX_WRITTEN)
			relay_unrun(r, o, facts[i].fact);
	}
	if (f == RELAY_FAULT_AUTH) {
		/* Never a restart: the runtime is fine, the relay lacks a
		 * key. */
		relay_fail_all(r, "The mcpvisor runtime asks for a credential "
				  "(HTTP 401): set MCPVISOR_API_KEY in the "
				  "relay's environment, or let the relay reach "
				  "the runtime through its Unix socket (no "
				  "--url)");
		return;
	}
	if (f == RELAY_FAULT_EXPIRED) {
		/* The runtime forgot the session (idle timeout, or a new
		 * runtime on the same socket): nothing is wrong with it. */
		relay_loss(r, RELAY_LOSS_NONE);
		return;
	}
	relay_loss(r, f == RELAY_FAULT_REFUSED ? RELAY_LOSS_REFUSED
					       : RELAY_LOSS_STREAM);
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
	relay_loss(r, RELAY_LOSS_NONE);
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
	relay_listens_free(r);
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
