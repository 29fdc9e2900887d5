/*
 * An instance's sign-in with OAuth tokens its owner holds (auth/auth.h,
 * through struct instance_signin): the bearer on every HTTP request, the
 * refresh ahead of expiry while it runs, the refresh a 401 asks for (the
 * refused request goes again on the new connection, calls wait), and what
 * needs_auth tells the user when only a sign-in helps. Tokens are secrets:
 * none reaches a log, a status or an error text from here.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "instance/instance_int.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xmalloc.h"

static void instance_wipe(char **s)
{
	if (*s == NULL)
		return;
	explicit_bzero(*s, strlen(*s));
	free(*s);
	*s = NULL;
}

bool instance_signs_in(const struct instance *inst)
{
	if (inst->signin == NULL || inst->server.url == NULL ||
	    inst->server.kind == SERVER_STDIO)
		return false;
	/* A configured Authorization header wins over tokens. */
	for (size_t i = 0; i < inst->server.nheaders; i++)
		if (strcasecmp(inst->server.headers[i].key, "Authorization") ==
		    0)
			return false;
	return true;
}

/* The bearer now: 0 (or -EKEYEXPIRED: a sign-in is due, the value may
 * still be taken) with *value set, -ENOENT when no tokens are stored. */
static int instance_bearer(const struct instance *inst, char **value,
			   int64_t *refresh_in_ms)
{
	*value = NULL;
	if (refresh_in_ms)
		*refresh_in_ms = -1;
	return inst->signin->bearer(inst->signin_arg, inst->name,
				    inst->server.url, value, refresh_in_ms);
}

const char *instance_authorization_cb(void *arg)
{
	struct instance *inst = arg;
	instance_wipe(&inst->auth_value);
	char *v = NULL;
	int rc = instance_bearer(inst, &v, NULL);
	if (rc == 0 || rc == -EKEYEXPIRED)
		inst->auth_value = v;
	else
		instance_wipe(&v);
	return inst->auth_value;
}

char *instance_signin_needs_text(const struct instance *inst, int status,
				 const char *text)
{
	char st[32] = "";
	if (status > 0)
		snprintf(st, sizeof st, " (HTTP %d)", status);
	if (!instance_signs_in(inst))
		return xasprintf("the server needs credentials%s: %s; set them "
				 "in the \"headers\" field of its config "
				 "entry, then it is tried again (or run "
				 "`mcpvisor restart %s`)",
				 st, text, inst->name);
	if (status == 403)
		return xasprintf("the server refused the access token (HTTP "
				 "403: %s); run `mcpvisor login %s` to ask for "
				 "the access it needs",
				 text, inst->name);
	return xasprintf("the server needs a sign-in%s; run `mcpvisor login "
			 "%s`",
			 st, inst->name);
}

/* ---- refresh ------------------------------------------------------------ */

/* needs_auth's text when a refresh failed for good: the reason, then the
 * command once (auth/ may end its reason with the command already). */
static char *instance_signin_ended_text(const struct instance *inst,
					const char *reason)
{
	char *tail =
		xasprintf("; sign in again: mcpvisor login %s", inst->name);
	size_t n = strlen(reason), t = strlen(tail);
	if (n >= t && strcmp(reason + n - t, tail) == 0)
		n -= t;
	free(tail);
	return xasprintf("its sign-in ended: %.*s; run `mcpvisor login %s`",
			 (int)n, reason, inst->name);
}

static void instance_signin_timer_cb(uv_timer_t *t);

/* A refresh ended: what it was for goes on. */
static void instance_refreshed_cb(void *arg, int err, const char *why)
{
	struct instance *inst = arg;
	enum instance_refresh what = inst->refreshing;
	inst->auth_req = NULL;
	inst->refreshing = INSTANCE_REFRESH_NONE;
	inst->signin_last_ms = clock_now_ms();
	bool after_401 = inst->refused_value != NULL;
	instance_wipe(&inst->refused_value);
	const char *reason = why && why[0] ? why : strerror(-err);
	if (err == 0) {
		inst->signin_retry_ms = 0;
		log_info("instance %s: access token refreshed", inst->name);
	} else {
		log_warn(
			"instance %s: the access token could not be refreshed: "
			"%s",
			inst->name, reason);
	}
	if (what == INSTANCE_REFRESH_THEN_OPEN) {
		if (inst->state != INSTANCE_STARTING || inst->freeing)
			return;
		if (err == -EACCES) {
			instance_fail(inst, INSTANCE_NEEDS_AUTH,
				      instance_signin_ended_text(inst, reason));
			return;
		}
		char *v = NULL;
		int rc = instance_bearer(inst, &v, NULL);
		instance_wipe(&v);
		/* Ahead of expiry, a token that still works is used while the
		 * refresh is tried again later; after a 401 it would not. */
		if (err == 0 || (!after_401 && rc == 0)) {
			if (err < 0)
				inst->signin_retry_ms =
					INSTANCE_SIGNIN_RETRY_MS;
			instance_open(inst);
			return;
		}
		instance_fail(inst, INSTANCE_FAILED,
			      xasprintf("its access token could not be "
					"refreshed: %s",
					reason));
		return;
	}
	if (inst->state != INSTANCE_READY || inst->freeing)
		return;
	if (err == -EACCES) {
		instance_fail(inst, INSTANCE_NEEDS_AUTH,
			      instance_signin_ended_text(inst, reason));
		return;
	}
	if (err < 0)
		inst->signin_retry_ms = INSTANCE_SIGNIN_RETRY_MS;
	instance_signin_state(inst);
}

/* Starts a refresh for what; sent: the value a 401 refused, NULL ahead of
 * expiry. 0 or -errno (nothing runs then). */
static int instance_refresh(struct instance *inst, enum instance_refresh what,
			    const char *sent)
{
	inst->refreshing = what;
	int rc = inst->signin->refresh(
		inst->signin_arg, inst->name, inst->server.url, sent,
		instance_refreshed_cb, inst, &inst->auth_req);
	if (rc < 0) {
		inst->refreshing = INSTANCE_REFRESH_NONE;
		inst->auth_req = NULL;
	}
	return rc;
}

/* How long until the refresh ahead of expiry is due, -1: never. Never
 * sooner than INSTANCE_SIGNIN_MIN_MS after the last one, nor than the
 * retry delay after one that failed on the way. */
static int64_t instance_refresh_due_ms(struct instance *inst)
{
	char *v = NULL;
	int64_t in = -1;
	int rc = instance_bearer(inst, &v, &in);
	instance_wipe(&v);
	if (rc != 0 || in < 0)
		return -1;
	uint64_t now = clock_now_ms();
	uint64_t gap = inst->signin_retry_ms ? inst->signin_retry_ms
					     : INSTANCE_SIGNIN_MIN_MS;
	if (inst->signin_last_ms && inst->signin_last_ms + gap > now &&
	    (uint64_t)in < inst->signin_last_ms + gap - now)
		in = (int64_t)(inst->signin_last_ms + gap - now);
	return in;
}

bool instance_signin_before_open(struct instance *inst)
{
	if (!instance_signs_in(inst))
		return false;
	const char *sent = inst->refused_value;
	if (sent == NULL && instance_refresh_due_ms(inst) != 0)
		return false;
	log_info("instance %s: refreshing its access token before it "
		 "connects",
		 inst->name);
	return instance_refresh(inst, INSTANCE_REFRESH_THEN_OPEN, sent) == 0;
}

static void instance_signin_timer_cb(uv_timer_t *t)
{
	struct instance *inst = t->data;
	if (inst->state != INSTANCE_READY || inst->auth_req || inst->freeing)
		return;
	log_info("instance %s: refreshing its access token ahead of expiry",
		 inst->name);
	if (instance_refresh(inst, INSTANCE_REFRESH_AHEAD, NULL) < 0) {
		inst->signin_retry_ms = INSTANCE_SIGNIN_RETRY_MS;
		inst->signin_last_ms = clock_now_ms();
		instance_signin_state(inst);
	}
}

void instance_signin_state(struct instance *inst)
{
	if (inst->freeing)
		return;
	uv_timer_stop(&inst->signin_timer);
	if (inst->state != INSTANCE_READY || !instance_signs_in(inst) ||
	    inst->auth_req)
		return;
	int64_t due = instance_refresh_due_ms(inst);
	if (due >= 0)
		uv_timer_start(&inst->signin_timer, instance_signin_timer_cb,
			       (uint64_t)due, 0);
}

void instance_signin_stop(struct instance *inst)
{
	if (inst->signin == NULL)
		return;
	if (!inst->freeing)
		uv_timer_stop(&inst->signin_timer);
	if (inst->auth_req)
		inst->signin->cancel(inst->auth_req);
	inst->auth_req = NULL;
	inst->refreshing = INSTANCE_REFRESH_NONE;
	instance_wipe(&inst->refused_value);
}

void instance_signin_free(struct instance *inst)
{
	instance_signin_stop(inst);
	instance_wipe(&inst->auth_value);
}

/* ---- a refusal ---------------------------------------------------------- */

bool instance_signin_fault(struct instance *inst,
			   const struct upstream_fault *f)
{
	if (!instance_signs_in(inst))
		return false;
	enum auth_verdict v = inst->signin->challenge(
		inst->signin_arg, inst->name, inst->server.url, f->http_status,
		f->www_authenticate, f->auth_sent);
	if (v != AUTH_RETRY && v != AUTH_REFRESH)
		return false;
	uint64_t now = clock_now_ms();
	if (inst->auth_reopens == 0 ||
	    now - inst->auth_reopen_first_ms > INSTANCE_AUTH_REOPEN_WINDOW_MS) {
		inst->auth_reopens = 0;
		inst->auth_reopen_first_ms = now;
	}
	if (++inst->auth_reopens > INSTANCE_MAX_AUTH_REOPENS) {
		inst->auth_reopens = 0;
		log_warn("instance %s: its tokens were refused %d times in a "
			 "row",
			 inst->name, INSTANCE_MAX_AUTH_REOPENS + 1);
		return false;
	}
	/* The refresh waits for the open; a newer token goes at once. */
	instance_wipe(&inst->refused_value);
	if (v == AUTH_REFRESH)
		inst->refused_value = xstrdup(f->auth_sent ? f->auth_sent : "");
	instance_reopen(inst, v == AUTH_REFRESH
				      ? "the server refused its access token; "
					"refreshing it"
				      : "the server refused its access token; "
					"a newer one is stored");
	return true;
}

/* ---- tokens changed on disk ------------------------------------------------
 */

void instance_credentials_changed(struct instance *inst)
{
	if (!instance_signs_in(inst) || inst->freeing)
		return;
	char *v = NULL;
	int rc = instance_bearer(inst, &v, NULL);
	instance_wipe(&v);
	switch (inst->state) {
	case INSTANCE_NEEDS_AUTH:
		if (rc != 0)
			return;
		log_info("instance %s: signed in; connecting", inst->name);
		inst->auth_reopens = 0;
		instance_start(inst);
		break;
	case INSTANCE_READY:
	case INSTANCE_STARTING:
		if (rc == -ENOENT &&
		    inst->refreshing == INSTANCE_REFRESH_NONE) {
			instance_fail(inst, INSTANCE_NEEDS_AUTH,
				      xasprintf("signed out; run `mcpvisor "
						"login %s`",
						inst->name));
			return;
		}
		instance_signin_state(inst);
		break;
	default:
		break;
	}
}

bool instance_signin_recheck(struct instance *inst)
{
	if (inst->state != INSTANCE_NEEDS_AUTH || inst->freeing ||
	    !instance_signs_in(inst) || inst->signin->reload == NULL)
		return false;
	/* Only tokens that changed: the ones that were refused (a 403
	 * asking for more access) would be refused again. */
	if (inst->signin->reload(inst->signin_arg, inst->name,
				 inst->server.url) != 1)
		return false;
	instance_credentials_changed(inst);
	return inst->state != INSTANCE_NEEDS_AUTH;
}
