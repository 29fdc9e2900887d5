/*
 * Turns on a server that asks its client mid-call without naming the call
 * (a stdio server's sampling, elicitation or roots request): which call
 * may be on the server now, the line of calls waiting to be sent, and the
 * line of answers a 2026-07-28 client brought back that wait to reach it.
 * calls.c sends and ends the calls; this file says when.
 */
#include "session/hub.h"
#include "session/hub_int.h"
#include "session/session_int.h"

/*
 * Over stdio a server's request (sampling, elicitation, roots) names no
 * call, so it is matched to the likeliest one; with two calls in flight a
 * second question could reach the wrong client. Once a server has asked
 * (hub_instance_asks), its calls take turns: one is on the server at a
 * time, the others wait in order until it ends. A call whose 2026-07-28
 * client was answered input_required waits for that client, and its
 * server waits for the answers: it asks nothing meanwhile, so the call
 * gives its turn up (a client that never comes back blocks nobody) and
 * takes it again before its answers go (session_turn_wait). */

/* Whether c is on inst's server now, where a question could be its. */
static bool session_turn_holds(const struct call *c, struct instance *inst)
{
	return c->inst == inst && !c->done && c->server_id > 0 &&
	       !exchange_waits_client(c->ex);
}

/* A call that may be asked is on inst's server now: another session's,
 * or one of self's own when its session keeps its calls apart. Otherwise
 * one client's calls run side by side: the likeliest cause among them is
 * the one that does not wait for its client (session_cause_on), and a
 * wrong guess could show that client only its own question. */
static bool session_turn_taken(struct hub *hub, struct instance *inst,
			       const struct call *self)
{
	for (struct hub_entry *e = hub->sessions; e; e = e->next) {
		if (e->s == self->session && !e->s->calls_apart)
			continue;
		for (struct call *c = e->s->calls.next; c != &e->s->calls;
		     c = c->next)
			if (c != self && session_turn_holds(c, inst))
				return true;
	}
	return false;
}

/* c waits for its turn when its server asks and another call is on it. */
bool session_call_wait_turn(struct call *c, struct instance *inst)
{
	struct hub *hub = c->session->hub;
	if (!hub_instance_asks(hub, inst) || !session_turn_taken(hub, inst, c))
		return false;
	struct call **pp = &hub->turns;
	while (*pp)
		pp = &(*pp)->next_turn;
	*pp = c;
	c->next_turn = NULL;
	c->waiting_turn = true;
	return true;
}

static void session_call_unturn(struct hub *hub, struct call *c)
{
	struct call **pp = &hub->turns;
	while (*pp && *pp != c)
		pp = &(*pp)->next_turn;
	if (*pp)
		*pp = c->next_turn;
	c->next_turn = NULL;
	c->waiting_turn = false;
}

static void session_call_unresume(struct hub *hub, struct call *c)
{
	struct call **pp = &hub->resumes;
	while (*pp && *pp != c)
		pp = &(*pp)->next_resume;
	if (*pp)
		*pp = c->next_resume;
	c->next_resume = NULL;
	c->resume_go = NULL;
	c->resume_arg = NULL;
}

/* The turn on inst may be free (a call ended, or waits for its client):
 * a call whose answers wait goes first, else the first new call waiting
 * (which looks again when ready: another may have come first). */
void session_turn_next(struct hub *hub, struct instance *inst)
{
	for (struct call *c = hub->resumes; c; c = c->next_resume) {
		if (c->inst != inst)
			continue;
		if (session_turn_taken(hub, inst, c))
			return;
		void (*go)(void *) = c->resume_go;
		void *arg = c->resume_arg;
		session_call_unresume(hub, c);
		exchange_set_waits_client(c->ex, false);
		go(arg);
		return;
	}
	for (struct call *c = hub->turns; c; c = c->next_turn) {
		if (c->inst != inst)
			continue;
		session_call_unturn(hub, c);
		session_call_resume(c);
		return;
	}
}

void session_keep_calls_apart(struct session *s)
{
	s->calls_apart = true;
}

/* The call of s on its server that ex answers. */
static struct call *session_ex_call(struct session *s,
				    const struct exchange *ex)
{
	for (struct call *c = s->calls.next; c != &s->calls; c = c->next)
		if (c->ex == ex && c->inst && c->server_id > 0 && !c->done)
			return c;
	return NULL;
}

void session_call_waits_client(struct session *s, struct exchange *ex, bool on)
{
	exchange_set_waits_client(ex, on);
	struct call *c = on ? session_ex_call(s, ex) : NULL;
	if (c && (s->hub->turns || s->hub->resumes))
		session_turn_next(s->hub, c->inst);
}

bool session_turn_wait(struct session *s, struct exchange *ex,
		       void (*go)(void *arg), void *arg)
{
	struct hub *hub = s->hub;
	struct call *c = session_ex_call(s, ex);
	if (c == NULL || !hub_instance_asks(hub, c->inst) ||
	    !session_turn_taken(hub, c->inst, c)) {
		exchange_set_waits_client(ex, false);
		return false;
	}
	session_call_unresume(hub, c);
	struct call **pp = &hub->resumes;
	while (*pp)
		pp = &(*pp)->next_resume;
	*pp = c;
	c->resume_go = go;
	c->resume_arg = arg;
	return true;
}

void session_turn_unwait(struct session *s, struct exchange *ex)
{
	for (struct call *c = s->hub->resumes; c; c = c->next_resume)
		if (c->session == s && c->ex == ex) {
			session_call_unresume(s->hub, c);
			return;
		}
}

bool session_turn_leave(struct call *c)
{
	if (c->resume_go)
		session_call_unresume(c->session->hub, c);
	if (!c->waiting_turn)
		return false;
	session_call_unturn(c->session->hub, c);
	return true;
}
