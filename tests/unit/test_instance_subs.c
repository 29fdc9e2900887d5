/*
 * Unit tests for the resource subscriptions an instance keeps across its
 * server's restarts (src/instance/subs.c): counted on the answers, across
 * clients; sent again to a 2025 server once a new process is ready,
 * before what waited for the start; lent to the upstream of a 2026-07-28
 * server (whose listen stream carries them) and never sent to it.
 */
#include <criterion/criterion.h>

#include "instance_fixture.h"

/* What the last open was lent (a copy; NULL: nothing). */
static json_t *lent;
static int lends;

static int subs_open(uv_loop_t *l, const struct upstream_spec *spec,
		     const struct upstream_cbs *cbs, void *ctx,
		     struct upstream **out)
{
	json_decref(lent);
	lent = spec->subs ? json_deep_copy(spec->subs) : NULL;
	lends++;
	return fake_open(l, spec, cbs, ctx, out);
}

static struct upstream_ops subs_ops;

static struct instance *make_subs(void)
{
	struct instance *inst = make(0);
	subs_ops = fake_ops;
	subs_ops.open = subs_open;
	instance_set_ops(inst, &subs_ops);
	lent = NULL;
	lends = 0;
	return inst;
}

static void finish_subs(struct instance *inst)
{
	finish(inst);
	json_decref(lent);
	lent = NULL;
}

static void handshake_as(struct fake_conn *c, const char *version)
{
	int64_t id;
	cr_assert(sent_method(c, "initialize", &id));
	char line[256];
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{"
		 "\"protocolVersion\":\"%s\",\"capabilities\":{},"
		 "\"serverInfo\":{\"name\":\"f\",\"version\":\"1\"}}}",
		 (long long)id, version);
	serve(c, line);
}

static void answer_ok(struct fake_conn *c, int64_t id)
{
	char line[128];
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}",
		 (long long)id);
	serve(c, line);
}

/* A client's (un)subscribe of uri, answered by the server (ok or not). */
static void client_sub(struct instance *inst, struct fake_conn *c,
		       const char *method, const char *uri, bool ok)
{
	struct got g = {0};
	int64_t id = request_kv(inst, method, "uri", uri, &g);
	cr_assert_gt(id, 0);
	if (ok) {
		answer_ok(c, id);
	} else {
		char line[200];
		snprintf(line, sizeof line,
			 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{"
			 "\"code\":-32601,\"message\":\"no\"}}",
			 (long long)id);
		serve(c, line);
	}
	cr_assert_eq(g.calls, 1);
}

/* The uris c was sent method for, in order, as one string "a b ...". */
static void sent_uris(struct fake_conn *c, const char *method, char *out,
		      size_t n)
{
	out[0] = '\0';
	for (int i = 0; i < c->nlines; i++) {
		json_t *m = sent(c, i);
		const char *mm =
			json_string_value(json_object_get(m, "method"));
		if (mm && strcmp(mm, method) == 0) {
			const char *u = json_string_value(json_object_get(
				json_object_get(m, "params"), "uri"));
			size_t k = strlen(out);
			snprintf(out + k, n - k, "%s%s", k ? " " : "", u);
		}
		json_decref(m);
	}
}

/* The index of the first line of c with method, -1 when none. */
static int line_of(struct fake_conn *c, const char *method)
{
	for (int i = 0; i < c->nlines; i++) {
		json_t *m = sent(c, i);
		const char *mm =
			json_string_value(json_object_get(m, "method"));
		bool hit = mm && strcmp(mm, method) == 0;
		json_decref(m);
		if (hit)
			return i;
	}
	return -1;
}

static int ready_err;

/* The server dies and is started again by the next use. */
static struct fake_conn *crash_and_back(struct instance *inst,
					const char *version)
{
	fake_exit(conns[nconns - 1], 1);
	cr_assert_eq(instance_state(inst), INSTANCE_FAILED);
	fake_now += 600000; /* past any backoff */
	ready_err = 1;
	instance_ensure(inst, ready_cb, &ready_err);
	struct fake_conn *c = conns[nconns - 1];
	handshake_as(c, version);
	cr_assert_eq(ready_err, 0);
	return c;
}

/* A subs instance started and ready, its server answering as version. */
static struct instance *started_as(const char *version)
{
	struct instance *inst = make_subs();
	ready_err = 1;
	instance_ensure(inst, ready_cb, &ready_err);
	handshake_as(conns[0], version);
	cr_assert_eq(ready_err, 0);
	return inst;
}

Test(subs, a_2025_server_is_sent_each_subscription_again_after_a_restart)
{
	struct instance *inst = started_as("2025-11-25");
	struct fake_conn *c = conns[0];
	client_sub(inst, c, "resources/subscribe", "test://a", true);
	client_sub(inst, c, "resources/subscribe", "test://b", true);
	/* Refused: the server does not follow it, nor will it after. */
	client_sub(inst, c, "resources/subscribe", "test://refused", false);
	client_sub(inst, c, "resources/unsubscribe", "test://b", true);

	c = crash_and_back(inst, "2025-11-25");
	char uris[256];
	sent_uris(c, "resources/subscribe", uris, sizeof uris);
	cr_assert_str_eq(uris, "test://a");
	/* Its answer is the instance's own: nobody waits for it. */
	int64_t id;
	cr_assert(sent_method(c, "resources/subscribe", &id));
	answer_ok(c, id);

	/* And again after the next restart: what was sent again is not
	 * counted twice, nor forgotten. */
	c = crash_and_back(inst, "2025-11-25");
	sent_uris(c, "resources/subscribe", uris, sizeof uris);
	cr_assert_str_eq(uris, "test://a");
	finish_subs(inst);
}

Test(subs, one_client_unsubscribing_leaves_the_others_subscribed)
{
	struct instance *inst = started_as("2025-11-25");
	struct fake_conn *c = conns[0];
	/* Two clients follow the same resource on the one session. */
	client_sub(inst, c, "resources/subscribe", "test://w", true);
	client_sub(inst, c, "resources/subscribe", "test://w", true);
	int before = sent_count(c, "resources/subscribe");
	/* The first's unsubscribe ends the session's subscription on a 2025
	 * server: the other's is asked for at once. */
	client_sub(inst, c, "resources/unsubscribe", "test://w", true);
	cr_assert_eq(sent_count(c, "resources/subscribe"), before + 1);
	int64_t id;
	cr_assert(sent_method(c, "resources/subscribe", &id));
	answer_ok(c, id);

	/* The second still follows it after a restart... */
	c = crash_and_back(inst, "2025-11-25");
	cr_assert_eq(sent_count(c, "resources/subscribe"), 1);
	/* ...until it unsubscribes too: nothing is asked for again. */
	client_sub(inst, c, "resources/unsubscribe", "test://w", true);
	cr_assert_eq(sent_count(c, "resources/subscribe"), 1);
	c = crash_and_back(inst, "2025-11-25");
	cr_assert_eq(sent_count(c, "resources/subscribe"), 0);
	finish_subs(inst);
}

/* A client's unsubscribe that waited for the start (as a session's
 * request does): sent when the start wakes it. */
struct waiting_unsub {
	struct got g;
	int64_t id;
};

static void unsub_when_ready(void *arg, struct instance *inst, int err)
{
	struct waiting_unsub *w = arg;
	cr_assert_eq(err, 0);
	w->id = request_kv(inst, "resources/unsubscribe", "uri", "test://u",
			   &w->g);
	cr_assert_gt(w->id, 0);
}

Test(subs, an_unsubscribe_during_a_restart_goes_after_the_resubscribe)
{
	struct instance *inst = started_as("2025-11-25");
	client_sub(inst, conns[0], "resources/subscribe", "test://u", true);

	fake_exit(conns[0], 1);
	fake_now += 600000;
	struct waiting_unsub w = {0};
	instance_ensure(inst, unsub_when_ready, &w);
	struct fake_conn *c = conns[nconns - 1];
	cr_assert_eq(w.id, 0, "it waits for the start");
	handshake_as(c, "2025-11-25");
	cr_assert_gt(w.id, 0);
	int sub = line_of(c, "resources/subscribe");
	int unsub = line_of(c, "resources/unsubscribe");
	cr_assert_geq(sub, 0);
	cr_assert_gt(unsub, sub,
		     "the unsubscribe (line %d) must follow the "
		     "subscribe it undoes (line %d)",
		     unsub, sub);
	answer_ok(c, w.id);
	cr_assert_eq(w.g.calls, 1);

	/* Nobody follows it any more. */
	c = crash_and_back(inst, "2025-11-25");
	cr_assert_eq(sent_count(c, "resources/subscribe"), 0);
	finish_subs(inst);
}

Test(subs, a_2026_server_is_lent_the_set_and_sent_no_subscribe)
{
	struct instance *inst = make_subs();
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_null(lent, "nothing to lend at the first start");
	handshake_as(conns[0], "2026-07-28");
	/* Answered by mcpvisor's side of the server (up_listen.c), which
	 * the instance sees as any answer. */
	client_sub(inst, conns[0], "resources/subscribe", "test://m", true);
	client_sub(inst, conns[0], "resources/subscribe", "test://m", true);
	client_sub(inst, conns[0], "resources/subscribe", "test://n", true);
	client_sub(inst, conns[0], "resources/unsubscribe", "test://n", true);
	int before = sent_count(conns[0], "resources/subscribe");
	client_sub(inst, conns[0], "resources/unsubscribe", "test://m", true);
	cr_assert_eq(sent_count(conns[0], "resources/subscribe"), before,
		     "its subscriptions are counted on mcpvisor's side");

	struct fake_conn *c = crash_and_back(inst, "2026-07-28");
	cr_assert_eq(lends, 2);
	cr_assert_not_null(lent);
	cr_assert_eq(json_object_size(lent), 1);
	cr_assert_eq(json_integer_value(json_object_get(lent, "test://m")), 1);
	cr_assert_eq(sent_count(c, "resources/subscribe"), 0);
	finish_subs(inst);
}

/* What instance_describe counts: distinct uris followed. */
static json_int_t followed(struct instance *inst)
{
	json_t *d = instance_describe(inst, false);
	json_int_t n = json_integer_value(json_object_get(d, "subscriptions"));
	json_decref(d);
	return n;
}

Test(subs, a_session_that_leaves_gives_its_subscriptions_back_on_2025)
{
	struct instance *inst = started_as("2025-11-25");
	struct fake_conn *c = conns[0];
	/* Two sessions follow w, one of them twice; one follows x alone. */
	client_sub(inst, c, "resources/subscribe", "test://w", true);
	client_sub(inst, c, "resources/subscribe", "test://w", true);
	client_sub(inst, c, "resources/subscribe", "test://w", true);
	client_sub(inst, c, "resources/subscribe", "test://x", true);
	cr_assert_eq(followed(inst), 2);

	/* The one that subscribed to w twice leaves: the other still
	 * follows it on the server's one session, so nothing is sent. */
	instance_subs_leave(inst, "test://w", 2);
	cr_assert_eq(sent_count(c, "resources/unsubscribe"), 0);
	cr_assert_eq(followed(inst), 2);
	/* x's only follower leaves: the server is told. */
	instance_subs_leave(inst, "test://x", 1);
	char uris[256];
	sent_uris(c, "resources/unsubscribe", uris, sizeof uris);
	cr_assert_str_eq(uris, "test://x");
	int64_t id;
	cr_assert(sent_method(c, "resources/unsubscribe", &id));
	answer_ok(c, id);
	cr_assert_eq(followed(inst), 1);
	/* A uri it never counted changes nothing. */
	instance_subs_leave(inst, "test://never", 1);
	cr_assert_eq(sent_count(c, "resources/unsubscribe"), 1);

	/* After a restart only w is asked for again. */
	c = crash_and_back(inst, "2025-11-25");
	sent_uris(c, "resources/subscribe", uris, sizeof uris);
	cr_assert_str_eq(uris, "test://w");
	cr_assert(sent_method(c, "resources/subscribe", &id));
	answer_ok(c, id);
	/* Its last follower leaves while it runs: told, and not asked
	 * for again at the next start. */
	instance_subs_leave(inst, "test://w", 1);
	cr_assert_eq(sent_count(c, "resources/unsubscribe"), 1);
	cr_assert_eq(followed(inst), 0);
	c = crash_and_back(inst, "2025-11-25");
	cr_assert_eq(sent_count(c, "resources/subscribe"), 0);
	finish_subs(inst);
}

Test(subs, a_session_that_leaves_a_stopped_server_sends_nothing)
{
	struct instance *inst = started_as("2025-11-25");
	client_sub(inst, conns[0], "resources/subscribe", "test://s", true);
	fake_exit(conns[0], 1);
	cr_assert_eq(instance_state(inst), INSTANCE_FAILED);
	int before = conns[0]->nlines;
	instance_subs_leave(inst, "test://s", 1);
	cr_assert_eq(conns[0]->nlines, before);
	cr_assert_eq(nconns, 1, "leaving starts nothing");
	/* The next start does not follow it. */
	fake_now += 600000;
	ready_err = 1;
	instance_ensure(inst, ready_cb, &ready_err);
	struct fake_conn *c = conns[nconns - 1];
	handshake_as(c, "2025-11-25");
	cr_assert_eq(ready_err, 0);
	cr_assert_eq(sent_count(c, "resources/subscribe"), 0);
	finish_subs(inst);
}

Test(subs, a_session_that_leaves_a_2026_server_undoes_each_of_its_own)
{
	struct instance *inst = started_as("2026-07-28");
	struct fake_conn *c = conns[0];
	client_sub(inst, c, "resources/subscribe", "test://m", true);
	client_sub(inst, c, "resources/subscribe", "test://m", true);
	client_sub(inst, c, "resources/subscribe", "test://m", true);
	/* mcpvisor's side of the server counts each client's subscribes:
	 * a session that made two undoes two there, and the third still
	 * follows. */
	instance_subs_leave(inst, "test://m", 2);
	cr_assert_eq(sent_count(c, "resources/unsubscribe"), 2);
	cr_assert_eq(followed(inst), 1);
	struct fake_conn *c2 = crash_and_back(inst, "2026-07-28");
	cr_assert_eq(json_integer_value(json_object_get(lent, "test://m")), 1);
	cr_assert_eq(sent_count(c2, "resources/subscribe"), 0);
	finish_subs(inst);
}
