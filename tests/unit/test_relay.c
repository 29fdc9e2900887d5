/*
 * The relay's core on a fake transport and the fake clock: each kind of
 * loss, the watch (heartbeats, pings), an answer during a check, the 45 s
 * cap, shared recovery, the resend rule and the re-initialized session.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "relay/relay.h"
#include "util/clock.h"
#include "util/xmalloc.h"

#define MAXN 64

static uint64_t now_ms;
static uint64_t fake_clock(void)
{
	return now_ms;
}

static struct fake {
	char *sent[MAXN];
	int64_t sent_id[MAXN];
	int nsent;
	char *host[MAXN];
	int nhost;
	int opens, closes, pings, recovers, forgets;
	int send_rc; /* what link_send returns (after recording) */
	enum relay_loss why;
	uint64_t armed;
} F;

static struct relay *R;

static int f_open(void *ctx)
{
	F.opens++;
	return 0;
}
static int f_send(void *ctx, const char *msg, size_t len, int64_t id)
{
	cr_assert_lt(F.nsent, MAXN);
	F.sent[F.nsent] = xstrndup(msg, len);
	F.sent_id[F.nsent++] = id;
	return F.send_rc;
}
static void f_forget(void *ctx, int64_t id)
{
	F.forgets++;
}
static void f_close(void *ctx)
{
	F.closes++;
}
static void f_ping(void *ctx)
{
	F.pings++;
}
static void f_recover(void *ctx, enum relay_loss why)
{
	F.recovers++;
	F.why = why;
}
static void f_host(void *ctx, const char *msg, size_t len)
{
	cr_assert_lt(F.nhost, MAXN);
	F.host[F.nhost++] = xstrndup(msg, len);
}
static void f_arm(void *ctx, uint64_t at)
{
	F.armed = at;
}

static const struct relay_ops ops = {
	.link_open = f_open,
	.link_send = f_send,
	.link_forget = f_forget,
	.link_close = f_close,
	.ping = f_ping,
	.recover = f_recover,
	.host_write = f_host,
	.arm = f_arm,
};

static void host(const char *line)
{
	relay_host_line(R, line, strlen(line));
}

static void runtime(const char *msg)
{
	relay_link_message(R, msg, strlen(msg), 0);
}

/* Advances the fake clock, running the timer as the loop would. */
static void advance(uint64_t ms)
{
	uint64_t end = now_ms + ms;
	while (F.armed && F.armed <= end) {
		now_ms = F.armed;
		F.armed = 0;
		relay_tick(R);
	}
	now_ms = end;
}

static const char *last_host(void)
{
	return F.nhost ? F.host[F.nhost - 1] : "";
}

static int host_find(const char *needle)
{
	for (int i = 0; i < F.nhost; i++)
		if (strstr(F.host[i], needle))
			return i;
	return -1;
}

static int sent_find_from(int from, const char *needle)
{
	for (int i = from; i < F.nsent; i++)
		if (strstr(F.sent[i], needle))
			return i;
	return -1;
}

static const char init_line[] =
	"{\"jsonrpc\":\"2.0\",\"id\":\"i\",\"method\":\"initialize\","
	"\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
	"\"clientInfo\":{\"name\":\"host-x\",\"version\":\"1\"}}}";

/* A live session: the runtime found, the host initialized. */
static void setup(void)
{
	memset(&F, 0, sizeof F);
	now_ms = 1000;
	clock_set_source(fake_clock);
	R = relay_new(&ops, NULL);
	relay_start(R);
	cr_assert_eq(F.recovers, 1);
	cr_assert_eq(F.why, RELAY_LOSS_NONE);
	host(init_line);
	cr_assert_eq(F.nsent, 0, "nothing goes before a runtime is found");
	relay_recovered(R, NULL);
	cr_assert_eq(F.opens, 1);
	cr_assert_eq(F.nsent, 1);
	cr_assert_eq(F.sent_id[0], 1);
	cr_assert(strstr(F.sent[0], "\"id\":1,"));
	runtime("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	cr_assert_str_eq(last_host(), "{\"jsonrpc\":\"2.0\",\"id\":\"i\","
				      "\"result\":{}}");
	host("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	cr_assert_eq(F.nsent, 2);
	cr_assert_eq(F.sent_id[1], 0);
	cr_assert(relay_live(R));
}

static void teardown(void)
{
	relay_free(R);
	for (int i = 0; i < F.nsent; i++)
		free(F.sent[i]);
	for (int i = 0; i < F.nhost; i++)
		free(F.host[i]);
	clock_set_source(NULL);
}

TestSuite(relay, .init = setup, .fini = teardown);

#define CALL(id)                                                               \
	"{\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"tools/call\","        \
	"\"params\":{\"name\":\"demo__echo\",\"arguments\":{}}}"
#define LIST(id) "{\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"tools/list\"}"

Test(relay, ids_are_mapped_both_ways)
{
	host(CALL("\"abc\""));
	cr_assert_eq(F.sent_id[2], 2);
	cr_assert(strstr(F.sent[2], "\"id\":2,"));
	/* The server's own messages pass as they are. */
	runtime("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
		"\"params\":{\"progressToken\":\"t\",\"progress\":1}}");
	cr_assert(strstr(last_host(), "progressToken"));
	runtime("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}");
	cr_assert_str_eq(last_host(), "{\"jsonrpc\":\"2.0\",\"id\":\"abc\","
				      "\"result\":{\"content\":[]}}");
	cr_assert_eq(relay_pending(R), 0);
}

Test(relay, host_cancellation_names_our_id)
{
	host(CALL("7"));
	host("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
	     "\"params\":{\"requestId\":7}}");
	cr_assert(strstr(F.sent[F.nsent - 1], "\"requestId\":2"));
	cr_assert_eq(F.forgets, 1);
	cr_assert_eq(relay_pending(R), 0);
}

Test(relay, bad_input_gets_an_error)
{
	host("not json");
	cr_assert(strstr(last_host(), "-32700"));
	host("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
	cr_assert(strstr(last_host(), "batches"));
	relay_host_garbage(R, "a line over the limit");
	cr_assert(strstr(last_host(), "over the limit"));
	host("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}");
	cr_assert(strstr(last_host(), "-32600"));
	cr_assert(relay_live(R));
	cr_assert_eq(F.recovers, 1);
}

Test(relay, heartbeats_keep_a_long_call_alive)
{
	host(CALL("1"));
	for (int i = 0; i < 60; i++) {
		advance(1000);
		relay_link_heartbeat(R);
	}
	cr_assert_eq(F.pings, 0, "a call that hears heartbeats is not checked");
	cr_assert_eq(relay_pending(R), 1);
}

Test(relay, silence_pings_and_an_answered_ping_keeps_waiting)
{
	host(CALL("1"));
	advance(RELAY_SILENCE_MS - 1);
	cr_assert_eq(F.pings, 0);
	advance(1);
	cr_assert_eq(F.pings, 1);
	advance(200);
	relay_ping_done(R, true);
	advance(RELAY_SILENCE_MS);
	cr_assert_eq(F.pings, 2, "still silent: checked again");
	relay_ping_done(R, true);
	cr_assert_eq(F.recovers, 1, "a runtime that answers pings is kept");
	cr_assert_eq(relay_pending(R), 1);
	runtime("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}");
	cr_assert(strstr(last_host(), "\"id\":1,"));
}

Test(relay, unanswered_ping_is_a_loss)
{
	host(CALL("1"));
	advance(RELAY_SILENCE_MS);
	cr_assert_eq(F.pings, 1);
	advance(RELAY_PING_TIMEOUT_MS);
	cr_assert_eq(F.recovers, 2);
	cr_assert_eq(F.why, RELAY_LOSS_SILENT);
	cr_assert_eq(F.closes, 1);
}

Test(relay, a_failed_ping_is_a_loss_at_once)
{
	host(LIST("1"));
	advance(RELAY_SILENCE_MS);
	relay_ping_done(R, false);
	cr_assert_eq(F.recovers, 2);
	cr_assert_eq(F.why, RELAY_LOSS_SILENT);
}

Test(relay, an_answer_during_the_check_counts_as_life)
{
	host(CALL("1"));
	advance(RELAY_SILENCE_MS);
	cr_assert_eq(F.pings, 1);
	advance(300);
	runtime("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}");
	cr_assert(strstr(last_host(), "\"id\":1,"));
	/* The ping itself then fails: the runtime just answered. */
	relay_ping_done(R, false);
	cr_assert_eq(F.recovers, 1);
	cr_assert(relay_live(R));
}

Test(relay, refused_is_a_loss)
{
	host(LIST("1"));
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	cr_assert_eq(F.recovers, 2);
	cr_assert_eq(F.why, RELAY_LOSS_REFUSED);
}

Test(relay, unsent_request_is_a_loss_and_goes_again)
{
	host(CALL("1"));
	relay_link_lost(R, 2, OUTBOX_UNWRITTEN);
	cr_assert_eq(F.recovers, 2);
	cr_assert_eq(F.why, RELAY_LOSS_REFUSED);
	int before = F.nsent;
	relay_recovered(R, NULL);
	/* Re-initialize with the host's own parameters first. */
	int init = sent_find_from(before, "host-x");
	cr_assert_geq(init, 0);
	runtime("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}");
	cr_assert_geq(sent_find_from(init, "notifications/initialized"), 0);
	cr_assert_geq(sent_find_from(init, "tools/call"), 0,
		      "a call that never left is sent again");
}

Test(relay, a_stream_that_ends_is_checked_then_lost)
{
	host(CALL("1"));
	host(LIST("2"));
	relay_link_lost(R, 3, OUTBOX_CUT);
	cr_assert_eq(F.pings, 1);
	cr_assert_eq(F.recovers, 1);
	relay_ping_done(R, false);
	cr_assert_eq(F.recovers, 2, "a stream ended, the ping failed: lost");
}

Test(relay, a_stream_that_ends_on_a_live_runtime_follows_the_rule)
{
	host(CALL("1"));
	host(LIST("2"));
	relay_link_lost(R, 2, OUTBOX_CUT);
	relay_link_lost(R, 3, OUTBOX_CUT);
	relay_ping_done(R, true);
	cr_assert_eq(F.recovers, 1, "the runtime lives: no recovery");
	cr_assert(strstr(last_host(), "may or may not have taken effect") ||
		  host_find("may or may not") >= 0);
	cr_assert_eq(sent_find_from(4, "tools/list"), 4,
		     "the list goes again on the same session");
	cr_assert_eq(relay_pending(R), 1);
}

Test(relay, credential_is_told_and_never_restarted)
{
	host(LIST("1"));
	relay_link_fault(R, RELAY_FAULT_AUTH, "401", NULL, 0);
	cr_assert(strstr(last_host(), "MCPVISOR_API_KEY"));
	cr_assert(strstr(last_host(), "\"id\":1,"));
	cr_assert_eq(F.recovers, 1);
	cr_assert_eq(relay_pending(R), 0);
}

Test(relay, requests_lost_together_share_one_recovery)
{
	host(CALL("1"));
	host(LIST("2"));
	relay_link_lost(R, 3, OUTBOX_UNWRITTEN);
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	relay_link_lost(R, 2, OUTBOX_CUT);
	advance(RELAY_SILENCE_MS * 3);
	cr_assert_eq(F.recovers, 2, "one recovery for both");
	host(LIST("3"));
	cr_assert_eq(F.recovers, 2, "a request during recovery waits on it");
	cr_assert_eq(relay_pending(R), 3);
}

Test(relay, resend_rule)
{
	host(CALL("1")); /* ours 2: written, may have run */
	host(LIST("2")); /* ours 3: changes nothing */
	host(CALL("3")); /* ours 4: never left */
	relay_link_lost(R, 4, OUTBOX_UNWRITTEN);
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	cr_assert_eq(F.recovers, 2, "lost together: one recovery");
	int before = F.nsent;
	relay_recovered(R, NULL);
	int a = host_find("may or may not have taken effect");
	cr_assert_geq(a, 0);
	cr_assert(strstr(F.host[a], "\"id\":1,"));
	runtime("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}");
	int calls = 0, lists = 0;
	for (int i = before; i < F.nsent; i++) {
		calls += strstr(F.sent[i], "tools/call") != NULL;
		lists += strstr(F.sent[i], "tools/list") != NULL;
	}
	cr_assert_eq(calls, 1, "only the unsent call goes again");
	cr_assert_eq(lists, 1);
	cr_assert_eq(relay_pending(R), 2);
}

Test(relay, a_failed_recovery_says_what_to_stop)
{
	host(CALL("1"));
	host(LIST("2"));
	relay_link_fault(R, RELAY_FAULT_BROKEN, "stream", NULL, 0);
	relay_recovered(R, "stop pid 42");
	cr_assert(strstr(F.host[F.nhost - 2], "may or may not"));
	cr_assert(strstr(F.host[F.nhost - 2], "stop pid 42"));
	cr_assert(strstr(last_host(), "stop pid 42"));
	cr_assert_eq(relay_pending(R), 0);
	/* The next request tries again. */
	host(LIST("3"));
	cr_assert_eq(F.recovers, 3);
}

Test(relay, a_long_recovery_answers_at_the_cap_and_carries_on)
{
	host(LIST("1"));
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	advance(RELAY_RECOVERY_CAP_MS - 1);
	cr_assert_eq(relay_pending(R), 1);
	advance(1);
	cr_assert(strstr(last_host(), "still starting"));
	cr_assert_eq(relay_pending(R), 0);
	host(LIST("2"));
	cr_assert_eq(F.recovers, 2, "the recovery carries on");
	relay_recovered(R, NULL);
	runtime("{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}");
	cr_assert_geq(sent_find_from(0, "tools/list"), 0);
	runtime("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[]}}");
	cr_assert(strstr(last_host(), "\"id\":2,"));
}

Test(relay, reinitialize_replays_the_session)
{
	host("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\","
	     "\"params\":{\"level\":\"debug\"}}");
	host("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/subscribe\","
	     "\"params\":{\"uri\":\"a://x\"}}");
	host("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/subscribe\","
	     "\"params\":{\"uri\":\"a://y\"}}");
	host("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":"
	     "\"resources/unsubscribe\",\"params\":{\"uri\":\"a://y\"}}");
	for (int id = 2; id <= 5; id++) {
		char m[64];
		snprintf(m, sizeof m,
			 "{\"jsonrpc\":\"2.0\",\"id\":%d,"
			 "\"result\":{}}",
			 id);
		runtime(m);
	}
	cr_assert_eq(relay_pending(R), 0);
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	int before = F.nsent, hbefore = F.nhost;
	relay_recovered(R, NULL);
	cr_assert_eq(F.opens, 2);
	cr_assert_eq(F.nsent, before + 1, "initialize alone first");
	cr_assert(strstr(F.sent[before], "host-x"));
	runtime("{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}");
	cr_assert_geq(sent_find_from(before, "\"level\":\"debug\""), 0);
	cr_assert_geq(sent_find_from(before, "a://x"), 0);
	cr_assert_lt(sent_find_from(before, "a://y"), 0, "unsubscribed");
	cr_assert_eq(F.nhost, hbefore,
		     "replay answers stay inside; the host listed nothing, so "
		     "no list_changed");
	cr_assert_lt(sent_find_from(before, "/list\""), 0);
	cr_assert(relay_live(R));
}

/* Answers the request sent at index i with result (our id spliced in). */
static void answer_sent(int i, const char *result)
{
	char m[512];
	snprintf(m, sizeof m, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}",
		 (long long)F.sent_id[i], result);
	runtime(m);
}

#define TOOLS_A "{\"tools\":[{\"name\":\"demo__echo\",\"description\":\"d\"}]}"
/* The same list as a tool cache writes it: keys sorted. */
#define TOOLS_A_SORTED                                                         \
	"{\"tools\":[{\"description\":\"d\",\"name\":\"demo__echo\"}]}"
#define TOOLS_B "{\"tools\":[{\"name\":\"demo__echo\"},{\"name\":\"x\"}]}"

Test(relay, a_new_runtime_brings_list_changed_only_for_lists_that_differ)
{
	host(LIST("1"));
	answer_sent(F.nsent - 1, TOOLS_A);
	host("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"prompts/list\"}");
	answer_sent(F.nsent - 1, "{\"prompts\":[]}");
	/* A later page is not what the host compares. */
	host("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/list\","
	     "\"params\":{\"cursor\":\"p2\"}}");
	answer_sent(F.nsent - 1, "{\"resources\":[]}");
	cr_assert_eq(relay_pending(R), 0);

	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	int before = F.nsent, hbefore = F.nhost;
	relay_recovered(R, NULL);
	answer_sent(before, "{}"); /* the re-initialize */
	int t = sent_find_from(before, "\"tools/list\"");
	int p = sent_find_from(before, "\"prompts/list\"");
	cr_assert_geq(t, 0, "the tools the host saw are asked for again");
	cr_assert_geq(p, 0);
	cr_assert_lt(sent_find_from(before, "resources/list"), 0,
		     "the host saw no first page of resources");
	answer_sent(t, TOOLS_A_SORTED);
	answer_sent(p, "{\"prompts\":[{\"name\":\"new\"}]}");
	cr_assert_lt(host_find("tools/list_changed"), 0, "same tools");
	cr_assert_geq(host_find("prompts/list_changed"), hbefore);
	cr_assert_eq(F.nhost, hbefore + 1, "probe answers stay inside");
	cr_assert_eq(relay_pending(R), 0);

	/* The next runtime is compared with what the host now has. */
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	before = F.nsent;
	hbefore = F.nhost;
	relay_recovered(R, NULL);
	answer_sent(before, "{}");
	answer_sent(sent_find_from(before, "\"tools/list\""), TOOLS_B);
	answer_sent(sent_find_from(before, "\"prompts/list\""),
		    "{\"prompts\":[{\"name\":\"new\"}]}");
	cr_assert_eq(F.nhost, hbefore + 1);
	cr_assert(strstr(last_host(), "tools/list_changed"));
}

Test(relay, a_paged_list_or_an_error_counts_as_changed)
{
	host(LIST("1"));
	answer_sent(F.nsent - 1, "{\"tools\":[],\"nextCursor\":\"c2\"}");
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	int before = F.nsent, hbefore = F.nhost;
	relay_recovered(R, NULL);
	answer_sent(before, "{}");
	answer_sent(sent_find_from(before, "\"tools/list\""),
		    "{\"tools\":[],\"nextCursor\":\"c2\"}");
	cr_assert_geq(host_find("tools/list_changed"), hbefore,
		      "a change past the first page cannot be seen");

	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	before = F.nsent;
	hbefore = F.nhost;
	relay_recovered(R, NULL);
	answer_sent(before, "{}");
	int t = sent_find_from(before, "\"tools/list\"");
	char m[256];
	snprintf(m, sizeof m,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-1,"
		 "\"message\":\"x\"}}",
		 (long long)F.sent_id[t]);
	runtime(m);
	cr_assert_eq(F.nhost, hbefore + 1);
	cr_assert(strstr(last_host(), "tools/list_changed"));
}

Test(relay, an_expired_session_is_opened_again_not_blamed)
{
	host(CALL("1"));
	/* mcpc names the POST that met the 404: ours 2. */
	struct outbox_fact_of refused = {2, OUTBOX_REFUSED};
	relay_link_fault(R, RELAY_FAULT_EXPIRED, "404", &refused, 1);
	cr_assert_eq(F.recovers, 2);
	cr_assert_eq(F.why, RELAY_LOSS_NONE, "the runtime is fine");
	int before = F.nsent;
	relay_recovered(R, NULL);
	runtime("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}");
	cr_assert_geq(sent_find_from(before, "tools/call"), 0,
		      "the call that heard the 404 never ran: sent again");
	cr_assert_lt(host_find("may or may not"), 0);
}

Test(relay, a_refused_request_waits_for_calls_still_running)
{
	host(CALL("1")); /* ours 2: running (a drain lets it finish) */
	host(CALL("2")); /* ours 3: refused (503, never processed) */
	relay_link_lost(R, 3, OUTBOX_UNWRITTEN);
	cr_assert_eq(F.recovers, 1, "the running call is waited for");
	int before = F.nsent;
	host(LIST("3"));
	cr_assert_eq(F.nsent, before, "new requests wait too");
	runtime("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}");
	cr_assert(strstr(last_host(), "\"id\":1,"),
		  "the running call answered");
	cr_assert_eq(F.recovers, 2);
	cr_assert_eq(F.why, RELAY_LOSS_REFUSED);
	relay_recovered(R, NULL);
	runtime("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}");
	cr_assert_geq(sent_find_from(before, "tools/call"), 0,
		      "the refused call goes to the next runtime");
	cr_assert_geq(sent_find_from(before, "tools/list"), 0);
	cr_assert_lt(host_find("may or may not"), 0);
}

/* Counts the writes of the host's call with our id ours. */
static int sent_count(int64_t ours)
{
	int n = 0;
	for (int i = 0; i < F.nsent; i++)
		n += F.sent_id[i] == ours;
	return n;
}

/* The review's case: a 404 on a POST that carried no request (the host's
 * answer to an elicitation) while a call is still running. mcpc names no
 * request, so the call that may be running is not sent again. */
Test(relay, a_404_on_a_message_that_is_no_request_resends_nothing)
{
	host(CALL("1")); /* ours 2: running */
	relay_link_fault(R, RELAY_FAULT_EXPIRED, "404", NULL, 0);
	relay_recovered(R, NULL);
	runtime("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}");
	cr_assert_eq(sent_count(2), 1, "the running call went once");
	cr_assert_geq(host_find("may or may not"), 0);
	cr_assert_eq(relay_pending(R), 0);
}

/* The answer to our own initialize of a new runtime is lost, and the
 * runtime answers the ping: it is asked again, and what the host sent
 * meanwhile goes once the session is whole (it used to wait forever). */
Test(relay, a_lost_reinitialize_on_a_live_runtime_is_asked_again)
{
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	int before = F.nsent;
	relay_recovered(R, NULL);
	cr_assert_eq(F.nsent, before + 1);
	int64_t init = F.sent_id[before];
	host(LIST("9"));
	cr_assert_eq(F.nsent, before + 1, "the host waits for the session");
	relay_link_lost(R, init, OUTBOX_CUT);
	cr_assert_eq(F.pings, 1);
	relay_ping_done(R, true);
	cr_assert_eq(F.nsent, before + 2, "initialize asked again");
	cr_assert(strstr(F.sent[before + 1], "host-x"));
	cr_assert_eq(F.recovers, 2, "the runtime lives: no recovery");
	answer_sent(before + 1, "{}");
	cr_assert_geq(sent_find_from(before + 2, "tools/list"), 0,
		      "the host's request goes once the session is whole");
	cr_assert(relay_live(R));
}

Test(relay, an_initialize_lost_again_and_again_is_a_loss)
{
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	relay_recovered(R, NULL);
	for (int i = 0; i < 3; i++) {
		relay_link_lost(R, F.sent_id[F.nsent - 1], OUTBOX_CUT);
		relay_ping_done(R, true);
	}
	cr_assert_eq(F.recovers, 3, "three lost answers: the runtime is lost");
	cr_assert_eq(F.why, RELAY_LOSS_STREAM);
}

/* A re-send after a ping fails to go out, so the runtime is lost and the
 * relay's own requests are let go while the walk goes on (it used to
 * walk on to a freed request: ASan sees it). */
Test(relay, a_failed_resend_after_a_ping_walks_no_freed_request)
{
	host(LIST("1"));
	answer_sent(F.nsent - 1, TOOLS_A);
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	host(LIST("2")); /* queued during the recovery: older than probes */
	int before = F.nsent;
	relay_recovered(R, NULL);
	answer_sent(before, "{}");
	int probe = sent_find_from(before + 1, "\"id\":0");
	int list = sent_find_from(before + 1, "\"tools/list\"");
	cr_assert_geq(list, 0);
	probe = -1;
	for (int i = before + 1; i < F.nsent; i++)
		if (F.sent_id[i] != F.sent_id[list] &&
		    strstr(F.sent[i], "tools/list"))
			probe = i;
	cr_assert_geq(probe, 0, "the probe of the list the host saw");
	relay_link_lost(R, F.sent_id[list], OUTBOX_CUT);
	relay_link_lost(R, F.sent_id[probe], OUTBOX_CUT);
	F.send_rc = -EPIPE;
	relay_ping_done(R, true);
	F.send_rc = 0;
	cr_assert_eq(F.recovers, 3, "the re-send could not go: lost");
	cr_assert_eq(relay_pending(R), 1, "the host's list waits");
}

/* A message the link refuses as too large is that request's fault: it
 * is answered, and the runtime is not taken for lost (or stopped). */
Test(relay, a_message_too_large_for_the_link_is_answered_not_a_loss)
{
	F.send_rc = -EMSGSIZE;
	host(CALL("5"));
	F.send_rc = 0;
	cr_assert(strstr(last_host(), "\"id\":5,"));
	cr_assert(strstr(last_host(), "too large"));
	cr_assert_eq(F.recovers, 1);
	cr_assert(relay_live(R));
	host(LIST("6"));
	cr_assert_geq(sent_find_from(0, "tools/list"), 0);
}

/* The rule, across every relay state: a call written once is never
 * written again, whatever comes; a list may go once more. */
Test(relay, every_fact_in_every_state_keeps_a_call_at_most_once)
{
	static const enum outbox_fact facts[] = {OUTBOX_CUT, OUTBOX_REFUSED,
						 OUTBOX_UNWRITTEN};
	for (int f = 0; f < 3; f++) {
		for (int how = 0; how < 4; how++) {
			teardown();
			setup();
			host(CALL("1")); /* ours 2 */
			if (how == 1)	 /* a second call holds the link */
				host(CALL("2"));
			relay_link_lost(R, 2, facts[f]);
			if (how == 2)
				relay_ping_done(R, true);
			else if (how == 3)
				relay_ping_done(R, false);
			if (how == 1)
				runtime("{\"jsonrpc\":\"2.0\",\"id\":3,"
					"\"result\":{}}");
			if (!relay_live(R)) {
				relay_recovered(R, NULL);
				for (int i = 0; i < F.nsent; i++)
					if (strstr(F.sent[i], "host-x") &&
					    i > 1)
						answer_sent(i, "{}");
			}
			int writes = sent_count(2);
			if (facts[f] == OUTBOX_CUT)
				cr_assert_eq(writes, 1,
					     "fact %d how %d: a call that may "
					     "have run went %d times",
					     f, how, writes);
			else
				cr_assert_leq(writes, 2, "fact %d how %d", f,
					      how);
			/* One answer at most for the host's id 1. */
			int answers = 0;
			for (int i = 0; i < F.nhost; i++)
				answers +=
					strstr(F.host[i], "\"id\":1,") != NULL;
			cr_assert_leq(answers, 1);
		}
	}
}

/* Requests and answers are spliced on the stack up to 4 KiB and on the
 * heap past it: byte-exact either way, at every size around the edge, and
 * our ids past one digit. */
Test(relay, splices_are_exact_around_the_stack_buffer)
{
	static char pad[5000];
	for (int k = 0; k <= 40; k++) {
		int64_t ours = (int64_t)k + 2;
		int size = 4076 + k; /* of what is spliced, either way */
		/* The request, then the answer (a shorter frame), padded to
		 * size bytes once spliced. */
		char *want0 =
			xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":"
				  "\"tools/call\",\"params\":{\"name\":\"e\","
				  "\"arguments\":{\"t\":\"\"}}}",
				  (long long)ours);
		int n = size - (int)strlen(want0);
		free(want0);
		memset(pad, 'x', (size_t)n);
		pad[n] = '\0';
		char *line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":\"h%d\","
				       "\"method\":\"tools/call\",\"params\":"
				       "{\"name\":\"e\",\"arguments\":{\"t\":"
				       "\"%s\"}}}",
				       size, pad);
		char *want = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%lld,"
				       "\"method\":\"tools/call\",\"params\":"
				       "{\"name\":\"e\",\"arguments\":{\"t\":"
				       "\"%s\"}}}",
				       (long long)ours, pad);
		cr_assert_eq(strlen(want), (size_t)size);
		host(line);
		cr_assert_eq(F.sent_id[F.nsent - 1], ours);
		cr_assert_str_eq(F.sent[F.nsent - 1], want);
		char *back0 = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":\"h%d\","
					"\"result\":{\"t\":\"\"}}",
					size);
		n = size - (int)strlen(back0);
		free(back0);
		memset(pad, 'y', (size_t)n);
		pad[n] = '\0';
		char *ans = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%lld,"
				      "\"result\":{\"t\":\"%s\"}}",
				      (long long)ours, pad);
		char *back = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":\"h%d\","
				       "\"result\":{\"t\":\"%s\"}}",
				       size, pad);
		cr_assert_eq(strlen(back), (size_t)size);
		runtime(ans);
		cr_assert_str_eq(last_host(), back);
		cr_assert_eq(relay_pending(R), 0);
		free(line);
		free(want);
		free(ans);
		free(back);
		/* The fake keeps MAXN messages: each size starts afresh. */
		for (int i = 2; i < F.nsent; i++)
			free(F.sent[i]);
		F.nsent = 2;
		for (int i = 0; i < F.nhost; i++)
			free(F.host[i]);
		F.nhost = 0;
	}
}
