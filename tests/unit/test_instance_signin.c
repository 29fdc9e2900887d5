/*
 * Unit tests for an instance's sign-in (instance/signin.c): the bearer on
 * each request, a 401 answered by a refresh and a new connection on which
 * the refused call goes once (other calls wait meanwhile), a refresh that
 * fails for good (needs_auth, `mcpvisor login`), a login picked up while
 * it waits, the refresh ahead of expiry. auth/ stands behind a fake
 * struct instance_signin whose refreshes the tests end by hand.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "instance_fixture.h"

/* ---- the fake auth ---- */

static struct {
	int bearer_rc;	    /* what bearer returns */
	char value[64];	    /* the value it gives */
	int64_t refresh_in; /* when it says to refresh */
	enum auth_verdict verdict;
	int challenges;
	int refreshes;
	bool sent_null; /* the last refresh was ahead of expiry */
	char sent[64];	/* else the value a 401 refused */
	auth_done_cb cb;
	void *cb_arg;
	int cancels;
	int reload_rc; /* what reload returns: 1 changed, 0 not */
	int reloads;
} fa;

static int fa_bearer(void *arg, const char *name, const char *url, char **value,
		     int64_t *refresh_in_ms)
{
	cr_assert_str_eq(name, "fx");
	cr_assert_str_eq(url, "https://example.invalid/mcp");
	if (refresh_in_ms)
		*refresh_in_ms = fa.refresh_in;
	if (fa.bearer_rc == -ENOENT)
		return -ENOENT;
	*value = strdup(fa.value);
	return fa.bearer_rc;
}

static enum auth_verdict fa_challenge(void *arg, const char *name,
				      const char *url, int status,
				      const char *www, const char *sent)
{
	fa.challenges++;
	return fa.verdict;
}

static struct auth_req *const fa_req = (struct auth_req *)&fa;

static int fa_refresh(void *arg, const char *name, const char *url,
		      const char *sent, auth_done_cb cb, void *cb_arg,
		      struct auth_req **out)
{
	cr_assert_null(fa.cb, "one refresh at a time");
	fa.refreshes++;
	fa.sent_null = sent == NULL;
	snprintf(fa.sent, sizeof fa.sent, "%s", sent ? sent : "");
	fa.cb = cb;
	fa.cb_arg = cb_arg;
	if (out)
		*out = fa_req;
	return 0;
}

static void fa_cancel(struct auth_req *r)
{
	cr_assert_eq(r, fa_req);
	fa.cancels++;
	fa.cb = NULL;
}

static int fa_reload(void *arg, const char *name, const char *url)
{
	cr_assert_str_eq(name, "fx");
	fa.reloads++;
	return fa.reload_rc;
}

static const struct instance_signin fa_signin = {
	.bearer = fa_bearer,
	.challenge = fa_challenge,
	.refresh = fa_refresh,
	.cancel = fa_cancel,
	.reload = fa_reload,
};

/* The refresh in flight ends with err. */
static void fa_done(int err, const char *why)
{
	cr_assert_not_null(fa.cb, "a refresh is in flight");
	auth_done_cb cb = fa.cb;
	fa.cb = NULL;
	cb(fa.cb_arg, err, why);
}

static struct instance *make_signed(void)
{
	memset(&fa, 0, sizeof fa);
	snprintf(fa.value, sizeof fa.value, "Bearer tok-1");
	fa.refresh_in = -1;
	fa.verdict = AUTH_REFRESH;
	next_signin = &fa_signin;
	struct instance *inst = make_kind(0, SERVER_HTTP_REMOTE, false, NULL);
	next_signin = NULL;
	fake_ops.caps |= UPSTREAM_RELATES | UPSTREAM_LATE_FACTS;
	return inst;
}

static struct instance *make_signed_ready(void)
{
	struct instance *inst = make_signed();
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(nconns, 1);
	fake_handshake(conns[0]);
	cr_assert_eq(err, 0);
	return inst;
}

static void done(struct instance *inst)
{
	fake_ops.caps &= ~(UPSTREAM_RELATES | UPSTREAM_LATE_FACTS);
	finish(inst);
}

static void answer(struct fake_conn *c, int64_t id)
{
	char line[128];
	snprintf(line, sizeof line,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{}}",
		 (long long)id);
	serve(c, line);
}

static int64_t call(struct instance *inst, struct got *g)
{
	const char *p = "{\"name\":\"a\",\"arguments\":{}}";
	int64_t id = instance_request_raw(inst, "tools/call", p, strlen(p),
					  got_cb, NULL, g);
	cr_assert_gt(id, 0);
	return id;
}

/* ---- the bearer ---- */

Test(signin, the_transport_asks_for_the_bearer_at_each_request)
{
	struct instance *inst = make_signed_ready();
	cr_assert_not_null(conns[0]->authorization);
	const char *v = conns[0]->authorization(conns[0]->auth_arg);
	cr_assert_str_eq(v, "Bearer tok-1");
	snprintf(fa.value, sizeof fa.value, "Bearer tok-2");
	v = conns[0]->authorization(conns[0]->auth_arg);
	cr_assert_str_eq(v, "Bearer tok-2", "read anew, not kept");
	fa.bearer_rc = -ENOENT;
	cr_assert_null(conns[0]->authorization(conns[0]->auth_arg));
	/* Nothing of it in what status shows. */
	json_t *d = instance_describe(inst, true);
	char *text = json_dumps(d, 0);
	cr_assert_null(strstr(text, "tok-"));
	free(text);
	json_decref(d);
	done(inst);
}

/* A header in the config wins: the tokens are not used. */
Test(signin, a_configured_authorization_header_wins)
{
	memset(&fa, 0, sizeof fa);
	struct config_kv h = {"authorization", "Bearer static"};
	next_signin = &fa_signin;
	next_headers = &h;
	next_nheaders = 1;
	struct instance *inst = make_kind(0, SERVER_HTTP_REMOTE, false, NULL);
	next_signin = NULL;
	next_headers = NULL;
	next_nheaders = 0;
	cr_assert(!instance_signs_in(inst));
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_null(conns[0]->authorization);
	fake_fault(conns[0], UPSTREAM_AUTH, 401, NULL);
	cr_assert_eq(fa.challenges, 0);
	cr_assert_not_null(strstr(instance_last_error(inst), "\"headers\""));
	finish(inst);
}

/* ---- a 401 ---- */

/* The token expired mid-session: the 401's request was not processed, so
 * once a refresh stored a new token it goes once on a new connection, and
 * a call made while the refresh is slow waits for it instead of failing. */
Test(signin, a_401_refreshes_and_the_refused_call_goes_once_on_a_new_connection)
{
	struct instance *inst = make_signed_ready();
	struct got refused = {0}, later = {0};
	int64_t id = call(inst, &refused);
	struct outbox_fact_of f = {id, OUTBOX_REFUSED};
	fake_fault_auth(conns[0], 401, "Bearer error=\"invalid_token\"",
			"Bearer tok-1", &f, 1);
	cr_assert_eq(fa.challenges, 1);
	cr_assert_eq(fa.refreshes, 1);
	cr_assert_str_eq(fa.sent, "Bearer tok-1", "the refused token");
	cr_assert_eq(instance_state(inst), INSTANCE_STARTING);
	cr_assert_eq(nconns, 1, "no connection before the refresh ends");
	cr_assert_eq(refused.calls, 0, "the refused call waits");
	/* The token endpoint is slow: a new call waits for the start. */
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(err, 1);
	snprintf(fa.value, sizeof fa.value, "Bearer tok-2");
	fa_done(0, NULL);
	cr_assert_eq(nconns, 2);
	cr_assert_str_eq(conns[1]->authorization(conns[1]->auth_arg),
			 "Bearer tok-2");
	fake_handshake(conns[1]);
	cr_assert_eq(err, 0);
	cr_assert_eq(sent_count(conns[1], "tools/call"), 1);
	answer(conns[1], id);
	cr_assert_eq(refused.calls, 1);
	cr_assert_eq(refused.code, 0, "answered, not failed");
	int64_t id2 = call(inst, &later);
	answer(conns[1], id2);
	cr_assert_eq(later.code, 0);
	done(inst);
}

/* A newer token is stored already (a login, another process): no refresh,
 * a new connection at once. */
Test(signin, a_401_with_a_newer_token_stored_reconnects_without_a_refresh)
{
	struct instance *inst = make_signed_ready();
	fa.verdict = AUTH_RETRY;
	fake_fault_auth(conns[0], 401, NULL, "Bearer tok-0", NULL, 0);
	cr_assert_eq(fa.refreshes, 0);
	cr_assert_eq(nconns, 2);
	fake_handshake(conns[1]);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	done(inst);
}

/* Only a sign-in helps: needs_auth, and every way it is told names the
 * command. */
Test(signin, a_401_that_needs_a_login_says_mcpvisor_login)
{
	struct instance *inst = make_signed();
	fa.verdict = AUTH_LOGIN;
	fa.bearer_rc = -ENOENT;
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	fake_fault_auth(conns[0], 401, NULL, NULL, NULL, 0);
	cr_assert_eq(err, -EACCES);
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);
	cr_assert_not_null(
		strstr(instance_last_error(inst), "`mcpvisor login fx`"), "%s",
		instance_last_error(inst));
	json_t *d = instance_describe(inst, false);
	cr_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(d, "auth"), "signIn")),
			 "mcpvisor login fx");
	json_decref(d);
	done(inst);
}

/* A refresh token refused (revoked): needs_auth with the reason. */
Test(signin, a_refresh_that_fails_for_good_needs_a_login_with_the_reason)
{
	struct instance *inst = make_signed_ready();
	struct got g = {0};
	int64_t id = call(inst, &g);
	struct outbox_fact_of f = {id, OUTBOX_REFUSED};
	fake_fault_auth(conns[0], 401, NULL, "Bearer tok-1", &f, 1);
	/* As auth/ says it: with the command, which is said once. */
	fa_done(-EACCES, "the authorization server refused the refresh: "
			 "invalid_grant; sign in again: mcpvisor login fx");
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);
	const char *e = instance_last_error(inst);
	cr_assert_str_eq(e, "its sign-in ended: the authorization server "
			    "refused the refresh: invalid_grant; run "
			    "`mcpvisor login fx`");
	cr_assert_eq(g.calls, 1);
	cr_assert_not_null(strstr(got_message(&g), "mcpvisor login fx"), "%s",
			   got_message(&g));
	cr_assert_null(instance_list(inst, INSTANCE_TOOLS), "tools dropped");
	done(inst);
}

/* A server that refuses every fresh token does not loop us. */
Test(signin, tokens_refused_again_and_again_end_in_needs_auth)
{
	struct instance *inst = make_signed_ready();
	for (int i = 0; i < INSTANCE_MAX_AUTH_REOPENS; i++) {
		fake_fault_auth(conns[nconns - 1], 401, NULL, "Bearer tok-1",
				NULL, 0);
		fa_done(0, NULL);
		fake_handshake(conns[nconns - 1]);
	}
	fake_fault_auth(conns[nconns - 1], 401, NULL, "Bearer tok-1", NULL, 0);
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);
	cr_assert_eq(fa.refreshes, INSTANCE_MAX_AUTH_REOPENS);
	done(inst);
}

/* ---- a login ---- */

Test(signin, a_login_while_it_waits_for_one_starts_it)
{
	struct instance *inst = make_signed();
	fa.verdict = AUTH_LOGIN;
	fa.bearer_rc = -ENOENT;
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	fake_fault_auth(conns[0], 401, NULL, NULL, NULL, 0);
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);
	/* Changed on disk, but still nothing for us: it keeps waiting. */
	instance_credentials_changed(inst);
	cr_assert_eq(nconns, 1);
	fa.bearer_rc = 0;
	instance_credentials_changed(inst);
	cr_assert_eq(nconns, 2);
	cr_assert_eq(instance_state(inst), INSTANCE_STARTING);
	fake_handshake(conns[1]);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	done(inst);
}

/* A call that comes right after a login, before the watch of the token
 * folder says so: the tokens are read again, it starts and the call
 * waits for it. */
Test(signin, a_call_right_after_a_login_reads_the_tokens_again_and_waits)
{
	struct instance *inst = make_signed();
	fa.verdict = AUTH_LOGIN;
	fa.bearer_rc = -ENOENT;
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	fake_fault_auth(conns[0], 401, NULL, NULL, NULL, 0);
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);
	/* The login stored tokens; the cache does not know yet. */
	fa.bearer_rc = 0;
	fa.reload_rc = 1;
	err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(fa.reloads, 1);
	cr_assert_eq(err, 1, "the call waits for the start");
	cr_assert_eq(nconns, 2);
	cr_assert_eq(instance_state(inst), INSTANCE_STARTING);
	fake_handshake(conns[1]);
	cr_assert_eq(err, 0);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	done(inst);
}

/* Tokens that did not change since they were refused (a 403 asking for
 * more access) are not tried again by each call. */
Test(signin, a_call_with_the_same_tokens_still_needs_a_login)
{
	struct instance *inst = make_signed();
	fa.verdict = AUTH_LOGIN;
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	fake_fault_auth(conns[0], 403, NULL, "Bearer tok-1", NULL, 0);
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);
	fa.reload_rc = 0;
	err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(fa.reloads, 1);
	cr_assert_eq(err, -EACCES);
	cr_assert_eq(nconns, 1);
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);
	done(inst);
}

Test(signin, a_logout_while_it_runs_needs_a_login)
{
	struct instance *inst = make_signed_ready();
	fa.bearer_rc = -ENOENT;
	instance_credentials_changed(inst);
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);
	cr_assert_not_null(strstr(instance_last_error(inst), "signed out"));
	done(inst);
}

/* ---- ahead of expiry ---- */

/* Due before it connects: refreshed first, then it opens. */
Test(signin, a_token_due_is_refreshed_before_it_connects)
{
	struct instance *inst = make_signed();
	fa.refresh_in = 0;
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	cr_assert_eq(fa.refreshes, 1);
	cr_assert(fa.sent_null, "ahead of expiry: no refused token");
	cr_assert_eq(nconns, 0);
	fa.refresh_in = 3600 * 1000;
	fa_done(0, NULL);
	cr_assert_eq(nconns, 1);
	fake_handshake(conns[0]);
	cr_assert_eq(err, 0);
	done(inst);
}

/* It failed on the way (the token endpoint is down) but the token still
 * works: it connects with it, and tries the refresh later. */
Test(signin, a_due_refresh_that_fails_on_the_way_still_connects)
{
	struct instance *inst = make_signed();
	fa.refresh_in = 0;
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	fa_done(-ETIMEDOUT, "the token endpoint did not answer in time");
	cr_assert_eq(nconns, 1);
	fake_handshake(conns[0]);
	cr_assert_eq(err, 0);
	done(inst);
}

/* While it runs, the refresh comes when bearer says (here at once, the
 * floor between refreshes aside): the connection stays. */
Test(signin, a_running_instance_refreshes_ahead_of_expiry_on_its_timer)
{
	struct instance *inst = make_signed();
	fa.refresh_in = 1;
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	fake_handshake(conns[0]);
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	cr_assert_eq(fa.refreshes, 0);
	while (fa.refreshes == 0)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert(fa.sent_null);
	fa.refresh_in = 3600 * 1000;
	fa_done(0, NULL);
	cr_assert_eq(nconns, 1, "the same connection");
	cr_assert_eq(instance_state(inst), INSTANCE_READY);
	done(inst);
}

Test(signin, a_refresh_ahead_refused_for_good_drops_to_needs_auth)
{
	struct instance *inst = make_signed();
	fa.refresh_in = 1;
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	fake_handshake(conns[0]);
	while (fa.refreshes == 0)
		uv_run(&loop, UV_RUN_ONCE);
	fa_done(-EACCES, "the refresh token was revoked");
	cr_assert_eq(instance_state(inst), INSTANCE_NEEDS_AUTH);
	cr_assert_not_null(strstr(instance_last_error(inst),
				  "the refresh token was "
				  "revoked"));
	done(inst);
}

/* A stop while a start waits for its refresh lets the refresh go. */
Test(signin, a_stop_during_the_refresh_cancels_the_wait)
{
	struct instance *inst = make_signed();
	fa.refresh_in = 0;
	int err = 1;
	instance_ensure(inst, ready_cb, &err);
	instance_stop(inst, "stopped on request", false);
	cr_assert_eq(fa.cancels, 1);
	cr_assert_eq(err, -ECANCELED);
	cr_assert_eq(instance_state(inst), INSTANCE_STOPPED);
	done(inst);
}
