/*
 * A session's numbered streams: a client that resumes after the replay
 * ring let its answers go is told of each one (an error answer with its
 * request's id) instead of waiting; the ring's byte bound and the request
 * records stay bounded.
 */
#include <errno.h>

#include "hub_fixture.h"
#include "session/session_int.h"

TestSuite(streams, .init = fx_setup_bare, .fini = fx_teardown);

/* A recorded stream (as a POST answered over SSE opens one) that answers
 * the requests named by ids/methods; its priming event id in prime. */
static struct exchange *open_stream(struct fx_capture *cap, json_t *const *ids,
				    const char *const *methods, unsigned n,
				    char *prime)
{
	struct exchange *ex = exchange_new(&fx_ops, cap, n);
	for (unsigned i = 0; i < n; i++)
		exchange_expect(ex, ids[i], methods[i]);
	session_stream_open(fx_sess, ex);
	session_stream_prime(fx_sess, ex, prime);
	return ex;
}

static void answer(struct exchange *ex, json_t *id, const char *text)
{
	json_t *r = jr_result(id, json_pack("{s:s}", "text", text));
	exchange_send(ex, r);
	json_decref(r);
}

/* Pushes more than the ring holds through another stream, so every older
 * event falls out of it. */
static void flood_ring(void)
{
	struct fx_capture cap = {json_array(), 0};
	struct exchange *other = exchange_new(&fx_ops, &cap, 0);
	char prime[EXCHANGE_EVENT_ID_MAX];
	session_stream_open(fx_sess, other);
	session_stream_prime(fx_sess, other, prime);
	char *fill = malloc(100 * 1024);
	memset(fill, 'f', 100 * 1024 - 1);
	fill[100 * 1024 - 1] = '\0';
	for (int i = 0; i < 8; i++) {
		json_t *note = jr_notification(
			"notifications/message",
			json_pack("{s:s,s:s}", "level", "info", "data", fill));
		exchange_send(other, note);
		json_decref(note);
	}
	free(fill);
	cr_assert_leq(fx_sess->ring_bytes, SESSION_RING_BYTES,
		      "the ring's byte bound holds");
	exchange_detach(other);
	exchange_unref(other);
	json_decref(cap.msgs);
}

/* The message data of replay event i, parsed. */
static json_t *event_msg(json_t *events, size_t i)
{
	json_t *ev = json_array_get(events, i);
	const char *data = json_string_value(json_object_get(ev, "data"));
	cr_assert_not_null(data);
	json_t *m = json_loads(data, 0, NULL);
	cr_assert_not_null(m, "replayed %s", data);
	return m;
}

static const char *error_message(json_t *m)
{
	return json_string_value(
		json_object_get(json_object_get(m, "error"), "message"));
}

/* One recorded stream under test: its capture, the ids of its requests
 * (owned) and its priming event id. */
struct stream_case {
	struct fx_capture cap;
	json_t *ids[3];
	unsigned n;
	char prime[EXCHANGE_EVENT_ID_MAX];
	struct exchange *ex;
};

/* Opens c's stream for n requests (taking their ids). */
static void case_open(struct stream_case *c, json_t *const *ids,
		      const char *const *methods, unsigned n)
{
	cr_assert_leq(n, sizeof c->ids / sizeof c->ids[0]);
	c->cap = (struct fx_capture){json_array(), 0};
	c->n = n;
	memcpy(c->ids, ids, n * sizeof *ids);
	c->ex = open_stream(&c->cap, c->ids, methods, n, c->prime);
}

static void case_close(struct stream_case *c)
{
	for (unsigned i = 0; i < c->n; i++)
		json_decref(c->ids[i]);
	json_decref(c->cap.msgs);
	exchange_unref(c->ex);
}

/* Resuming c from its priming event ends the stream (every answer was
 * sent) with one event: an error for id whose message holds text. */
static void assert_resumes_to_one_error(struct stream_case *c, json_t *id,
					const char *text)
{
	struct exchange *cont = NULL;
	json_t *events = NULL;
	cr_assert_eq(session_stream_resume(fx_sess, c->prime, &cont, &events),
		     0);
	cr_assert_null(cont);
	cr_assert_eq(json_array_size(events), 1);
	json_t *m = event_msg(events, 0);
	cr_assert(json_equal(json_object_get(m, "id"), id));
	cr_assert_not_null(strstr(error_message(m), text));
	json_decref(m);
	json_decref(events);
}

Test(streams, answers_the_ring_let_go_come_back_as_errors_per_request)
{
	struct stream_case c;
	case_open(&c, (json_t *[]){json_integer(7), json_string("r1")},
		  (const char *[]){"tools/call", "resources/read"}, 2);
	struct exchange *ex = c.ex;
	json_t **ids = c.ids;
	/* The client stopped reading: the stream was set aside. */
	session_stream_park(fx_sess, ex);
	exchange_detach(ex);
	answer(ex, ids[1], "read");
	answer(ex, ids[0], "called");
	cr_assert(exchange_finished(ex));
	flood_ring();

	struct exchange *cont = NULL;
	json_t *events = NULL;
	cr_assert_eq(session_stream_resume(fx_sess, c.prime, &cont, &events), 0,
		     "the stream is found though its events left the ring");
	cr_assert_null(cont, "every answer was sent: the stream ends");
	cr_assert_eq(json_array_size(events), 2, "%s", json_dumps(events, 0));
	/* In the order the answers went out. */
	json_t *first = event_msg(events, 0);
	json_t *second = event_msg(events, 1);
	cr_assert(json_equal(json_object_get(first, "id"), ids[1]));
	cr_assert(json_equal(json_object_get(second, "id"), ids[0]));
	cr_assert_not_null(strstr(error_message(first), "did not read it"));
	cr_assert_not_null(strstr(error_message(first), "sent again"),
			   "a read changes nothing: %s", error_message(first));
	cr_assert_not_null(
		strstr(error_message(second), "may or may not have taken"),
		"a tools/call may have run: %s", error_message(second));
	cr_assert(json_is_false(json_object_get(
		json_object_get(json_object_get(second, "error"), "data"),
		"retrySafe")));

	/* Resuming after the last error's own id repeats nothing. */
	const char *after = json_string_value(
		json_object_get(json_array_get(events, 1), "id"));
	cr_assert_not_null(after);
	json_t *again = NULL;
	cr_assert_eq(session_stream_resume(fx_sess, after, &cont, &again), 0);
	cr_assert_eq(json_array_size(again), 0);
	json_decref(again);

	json_decref(first);
	json_decref(second);
	json_decref(events);
	case_close(&c);
}

Test(streams, answer_over_the_ring_bound_is_kept_as_its_number_only)
{
	struct stream_case c;
	case_open(&c, (json_t *[]){json_integer(3)},
		  (const char *[]){"tools/call"}, 1);
	size_t big = SESSION_RING_BYTES + 1024;
	char *text = malloc(big);
	memset(text, 'b', big - 1);
	text[big - 1] = '\0';
	answer(c.ex, c.ids[0],
	       text); /* delivered live, then the client lost it */
	free(text);
	cr_assert_eq(json_array_size(c.cap.msgs), 1, "delivered whole");
	cr_assert_eq(c.cap.finished, 1);
	cr_assert_lt(fx_sess->ring_bytes, 1024, "the ring kept none of it");
	assert_resumes_to_one_error(&c, c.ids[0], "may or may not");
	case_close(&c);
}

Test(streams, lost_answers_are_told_and_pending_ones_still_come_live)
{
	struct stream_case c;
	case_open(
		&c,
		(json_t *[]){json_integer(1), json_integer(2), json_integer(3)},
		(const char *[]){"tools/call", "tools/call", "prompts/get"}, 3);
	struct exchange *ex = c.ex;
	json_t **ids = c.ids;
	session_stream_park(fx_sess, ex);
	exchange_detach(ex);
	/* Answers as text, out of order: each is matched by its id. */
	char *t2 = strdup("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}");
	exchange_send_text(ex, t2, strlen(t2), true);
	flood_ring();
	char *t3 = strdup("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}");
	exchange_send_text(ex, t3, strlen(t3), true);

	struct exchange *cont = NULL;
	json_t *events = NULL;
	cr_assert_eq(session_stream_resume(fx_sess, c.prime, &cont, &events),
		     0);
	cr_assert_eq(cont, ex, "request 1 is still to be answered");
	cr_assert_eq(json_array_size(events), 2, "%s", json_dumps(events, 0));
	json_t *lost = event_msg(events, 0);
	json_t *kept = event_msg(events, 1);
	cr_assert(json_equal(json_object_get(lost, "id"), ids[1]));
	cr_assert_not_null(json_object_get(lost, "error"));
	cr_assert(json_equal(json_object_get(kept, "id"), ids[2]));
	cr_assert_not_null(json_object_get(kept, "result"),
			   "an answer still in the ring is replayed as is");
	cr_assert_eq(exchange_rebind(ex, &fx_ops, &c.cap), 0);
	answer(ex, ids[0], "late");
	cr_assert_eq(c.cap.finished, 1, "the last answer came live");
	exchange_unref(cont);
	json_decref(lost);
	json_decref(kept);
	json_decref(events);
	case_close(&c);
}

Test(streams, an_ended_stream_tells_of_requests_it_never_answered)
{
	struct stream_case c;
	case_open(&c, (json_t *[]){json_string("c")},
		  (const char *[]){"tools/call"}, 1);
	session_stream_park(fx_sess, c.ex);
	exchange_detach(c.ex);
	session_sweep(fx_sess, UINT64_MAX / 2); /* parked for too long */
	exchange_skip(c.ex);			/* its call was cancelled */
	cr_assert(exchange_finished(c.ex));
	assert_resumes_to_one_error(&c, c.ids[0], "stopped");
	case_close(&c);
}

Test(streams, unknown_or_malformed_ids_are_not_resumed)
{
	struct stream_case c;
	case_open(&c, (json_t *[]){json_integer(1)}, (const char *[]){"ping"},
		  1);
	exchange_detach(c.ex);
	struct exchange *cont = NULL;
	json_t *events = NULL;
	const char *bad[] = {"",     "x",    "12",   "1-",  "-1",
			     "1-2x", "1--2", " 1-1", "99-1"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(
			session_stream_resume(fx_sess, bad[i], &cont, &events),
			-ENOENT, "%s", bad[i]);
	/* An event of the stream that was never sent. */
	char future[EXCHANGE_EVENT_ID_MAX];
	snprintf(future, sizeof future, "%.*s-999999",
		 (int)strcspn(c.prime, "-"), c.prime);
	cr_assert_eq(session_stream_resume(fx_sess, future, &cont, &events),
		     -ENOENT);
	case_close(&c);
}

Test(streams, records_of_ended_streams_stay_bounded)
{
	/* Long ids: the byte budget, not the count, is what bounds them. */
	char *long_id = malloc(8 * 1024);
	memset(long_id, 'i', 8 * 1024 - 1);
	long_id[8 * 1024 - 1] = '\0';
	for (int i = 0; i < 4 * SESSION_MAX_STREAMS; i++) {
		struct stream_case c;
		case_open(&c,
			  (json_t *[]){i % 2 ? json_string(long_id)
					     : json_integer(i)},
			  (const char *[]){"tools/call"}, 1);
		answer(c.ex, c.ids[0], "ok");
		case_close(&c);
		cr_assert_leq(fx_sess->nstreams, 2 * SESSION_MAX_STREAMS);
		/* Between prunes too: over twice the budget, opening one
		 * prunes first. */
		cr_assert_leq(fx_sess->streams_cost,
			      2 * SESSION_REQ_BYTES + 16 * 1024);
	}
	free(long_id);
	session_streams_prune(fx_sess);
	cr_assert_leq(fx_sess->nstreams, SESSION_MAX_STREAMS);
	size_t bytes = 0;
	for (struct stream_rec *r = fx_sess->streams; r; r = r->next)
		bytes += exchange_footprint(r->ex);
	cr_assert_leq(bytes, SESSION_REQ_BYTES);
	cr_assert_eq(bytes, fx_sess->streams_cost);
	cr_assert_gt(fx_sess->nstreams, 0, "the newest are kept");
}
