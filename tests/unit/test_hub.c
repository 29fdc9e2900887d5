/*
 * The hub's sessions: idle expiry never ends a session with a request in
 * flight, the session cap evicts the session idle longest and refuses when
 * all are busy, and lookups by id are a hash away. Fake clock, real loop,
 * the demo fixture server.
 */
#include "hub_fixture.h"

TestSuite(hub, .init = fx_setup, .fini = fx_teardown, .timeout = 30);

static const char *sleep_call(int id, int ms, char *buf, size_t n)
{
	snprintf(buf, n,
		 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"demo__sleep\",\"arguments\":"
		 "{\"ms\":%d}}}",
		 id, ms);
	return buf;
}

/* R5: a call in flight is not idleness, and the idle time runs from the
 * end of the last request. */
Test(hub, sweep_spares_a_session_with_a_call_in_flight)
{
	hub_set_session_timeout(fx_hub, 2000);
	struct session *s = fx_open(NULL);
	char id[SESSION_ID_LEN + 1];
	strcpy(id, session_id(s));
	char buf[256];
	struct fx_req *r = fx_send(s, sleep_call(1, 300, buf, sizeof buf));
	/* Far past the timeout while the call runs. */
	fx_now += 10000;
	hub_sweep(fx_hub);
	cr_assert_eq(hub_session_find(fx_hub, id), s, "not swept while busy");
	cr_assert(fx_run_until(fx_answered, r));
	json_t *resp = fx_response(r);
	cr_assert_null(json_object_get(resp, "error"), "the call ran whole");
	cr_assert_str_eq(fx_text(resp), "slept 300 ms");
	fx_req_free(r);
	/* Idle from now on: less than the timeout keeps it. */
	fx_now += 1500;
	hub_sweep(fx_hub);
	cr_assert_eq(hub_session_find(fx_hub, id), s);
	fx_now += 600;
	hub_sweep(fx_hub);
	cr_assert_null(hub_session_find(fx_hub, id), "expired once idle");
}

/* Finding 9: at the cap, the oldest idle session makes room. */
Test(hub, cap_evicts_the_session_idle_longest)
{
	hub_set_max_sessions(fx_hub, 3);
	struct session *s[3];
	char ids[3][SESSION_ID_LEN + 1];
	for (int i = 0; i < 3; i++) {
		s[i] = fx_open(NULL);
		strcpy(ids[i], session_id(s[i]));
		fx_now += 10;
	}
	/* The first is used again: the second is now idle longest. */
	struct fx_req *p = fx_send(
		s[0], "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
	fx_req_free(p);
	fx_now += 10;
	struct session *n = fx_open(NULL);
	cr_assert_not_null(n);
	cr_assert_eq(hub_session_count(fx_hub), 3);
	cr_assert_null(hub_session_find(fx_hub, ids[1]), "evicted");
	cr_assert_eq(hub_session_find(fx_hub, ids[0]), s[0]);
	cr_assert_eq(hub_session_find(fx_hub, ids[2]), s[2]);
}

static bool fx_all_answered(void *arg)
{
	struct fx_req **r = arg;
	for (int i = 0; r[i]; i++)
		if (r[i]->cap.finished == 0)
			return false;
	return true;
}

/* ... and never one with a request in flight: when every session is
 * busy, initialize is refused. */
Test(hub, cap_refuses_when_every_session_is_busy)
{
	hub_set_max_sessions(fx_hub, 2);
	struct session *a = fx_open(NULL), *b = fx_open(NULL);
	char buf[256];
	struct fx_req *r[3] = {fx_send(a, sleep_call(1, 400, buf, sizeof buf)),
			       fx_send(b, sleep_call(2, 400, buf, sizeof buf)),
			       NULL};
	fx_now += 100000;
	cr_assert_null(fx_open(NULL), "refused: both sessions are busy");
	cr_assert_eq(hub_session_count(fx_hub), 2);
	cr_assert(fx_run_until(fx_all_answered, r));
	for (int i = 0; i < 2; i++) {
		cr_assert_null(json_object_get(fx_response(r[i]), "error"),
			       "the busy sessions' calls ran whole");
		fx_req_free(r[i]);
	}
	cr_assert_not_null(fx_open(NULL), "room once a session is idle");
	cr_assert_eq(hub_session_count(fx_hub), 2);
}

/* Lookups by id: every session of many is found, a forged id is not, an
 * ended one is gone. */
Test(hub, lookup_by_id_over_many_sessions)
{
	enum { N = 3000 };
	hub_set_max_sessions(fx_hub, N);
	static char ids[N][SESSION_ID_LEN + 1];
	static struct session *ss[N];
	for (int i = 0; i < N; i++) {
		ss[i] = fx_open(NULL);
		strcpy(ids[i], session_id(ss[i]));
	}
	for (int i = 0; i < N; i++)
		cr_assert_eq(hub_session_find(fx_hub, ids[i]), ss[i]);
	cr_assert_null(hub_session_find(fx_hub, "0123456789abcdef"));
	cr_assert_null(hub_session_find(fx_hub, ""));
	for (int i = 0; i < N; i += 2)
		hub_session_end(fx_hub, ss[i]);
	for (int i = 0; i < N; i++)
		cr_assert_eq(hub_session_find(fx_hub, ids[i]),
			     i % 2 ? ss[i] : NULL);
	cr_assert_eq(hub_session_count(fx_hub), N / 2);
}
