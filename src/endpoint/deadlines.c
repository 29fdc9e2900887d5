/*
 * The endpoint's clock-driven side: one sweep timer closes connections
 * past their header, idle or stalled-writer deadline and writes SSE
 * heartbeats on quiet answer streams; and at the connection cap, the
 * connection that loses least makes room. Time comes from clock_now_ms()
 * so tests drive it with a fake clock. Also the loop turn's share of a
 * connection with pipelined requests.
 */
#include "endpoint/endpoint_int.h"
#include "util/clock.h"
#include "util/flow.h"

/* One SSE comment as one HTTP chunk: 6 bytes ": hb\n\n". */
static const char ep_heartbeat[] = "6\r\n: hb\n\n\r\n";

/* A quiet SSE answer gets a comment. Only streams that wrote nothing for
 * EP_HEARTBEAT_MS pay for it, and nothing is allocated when the socket
 * takes it at once (the usual case for a quiet stream). An answer whose
 * head still waits for its first event (a long call) gets its head then,
 * so a client hears the runtime alive from the first second on. */
static void ep_heartbeat_check(struct conn *c, uint64_t now)
{
	if (!(c->sse || c->sse_started) || c->state != CONN_BUSY ||
	    now - c->sse_ms < EP_HEARTBEAT_MS ||
	    c->u.s.write_queue_size + c->out.len > 0)
		return;
	if (!c->sse_started) {
		ep_sse_start(c);
		return;
	}
	c->sse_ms = now;
	ep_write(c, ep_heartbeat, sizeof ep_heartbeat - 1);
}

/* How long queued output may make no progress. Shorter when it holds a
 * paused server: then the stall holds up that server's other clients,
 * so the stream is set aside (resumable) and the server read again. */
static uint64_t ep_stall_ms(const struct endpoint *ep, const struct conn *c)
{
	if (c->flow && c->flow->paused &&
	    ep->idle_timeout_ms > EP_PAUSE_STALL_MS)
		return EP_PAUSE_STALL_MS;
	return ep->idle_timeout_ms;
}

void ep_sweep(struct endpoint *ep, uint64_t now)
{
	struct conn *next;
	for (struct conn *c = ep->conns; c; c = next) {
		next = c->next;
		/* Output still queued: the stalled-writer rule applies. */
		if (c->deadline_ms && now >= c->deadline_ms &&
		    c->u.s.write_queue_size == 0)
			ep_conn_close(c);
		else if (c->u.s.write_queue_size > 0 &&
			 now - c->write_ms >= ep_stall_ms(ep, c))
			ep_conn_overflow(c);
		/* Its client sent more than one request can be while its
		 * answer is open, and the answer has been quiet: it is not
		 * waited for forever (reading is stopped, so not even its
		 * close would be seen). */
		else if (c->state == CONN_BUSY && c->paused_ms &&
			 now - c->paused_ms >= ep->idle_timeout_ms &&
			 now - c->event_ms >= ep->idle_timeout_ms)
			ep_conn_close(c);
		else
			ep_heartbeat_check(c, now);
	}
}

void ep_sweep_cb(uv_timer_t *t)
{
	ep_sweep(t->data, clock_now_ms());
}

/* At the cap, the connection idle the longest makes room: an idle
 * keep-alive connection costs its client only a reconnect. */
bool ep_evict_idle(struct endpoint *ep, bool is_unix)
{
	/* Else the oldest one still sending its request: at the cap, the
	 * slowest senders are the likeliest to be holding slots on purpose,
	 * and a connection being answered is never cut for a newcomer. */
	struct conn *idle = NULL, *reading = NULL;
	for (struct conn *c = ep->conns; c; c = c->next) {
		if (c->is_unix != is_unix || c->state != CONN_READING)
			continue;
		/* Newest first: the last match is the oldest. */
		if (c->idle)
			idle = c;
		else
			reading = c;
	}
	struct conn *victim = idle ? idle : reading;
	if (victim == NULL)
		return false;
	ep_conn_close(victim);
	return true;
}

/* The next turn: connections whose share ran out go on, from their
 * first request again. */
static void ep_again_cb(uv_idle_t *h)
{
	struct endpoint *ep = h->data;
	struct conn *list = ep->deferred;
	ep->deferred = NULL;
	uv_idle_stop(h);
	while (list) {
		struct conn *c = list;
		list = c->deferred_next;
		c->deferred = false;
		c->served = 0;
		ep_conn_resume(c);
	}
}

/* One connection's pipelined batch does not hold the loop: after its
 * share the rest waits for the next turn (the idle handle keeps the
 * loop from blocking meanwhile). */
void ep_conn_defer(struct conn *c)
{
	if (c->deferred)
		return;
	c->deferred = true;
	c->deferred_next = c->ep->deferred;
	c->ep->deferred = c;
	uv_idle_start(&c->ep->again, ep_again_cb);
}
