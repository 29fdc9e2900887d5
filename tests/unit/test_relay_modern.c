/*
 * The relay's core with a host speaking MCP 2026-07-28 on the fake
 * transport and the fake clock: no initialize waited for, answers and the
 * revision's errors passed through byte for byte, cancellation by a
 * dropped stream, a listen kept across runtimes (sent again, its
 * acknowledgement not repeated), the resend rule, and both eras on one
 * stdio.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "relay/relay.h"
#include "util/clock.h"
#include "util/xmalloc.h"

#define MAXN 96

static uint64_t now_ms;
static uint64_t fake_clock(void)
{
	return now_ms;
}

static struct fake {
	char *sent[MAXN];
	int64_t sent_id[MAXN];
	bool sent_modern[MAXN];
	int nsent;
	char *host[MAXN];
	int nhost;
	int64_t forgot[MAXN];
	int opens, closes, pings, recovers, forgets;
	int send_rc;
	enum relay_loss why;
	uint64_t armed;
} F;

static struct relay *R;

static int f_open(void *ctx)
{
	F.opens++;
	return 0;
}
static int f_record(const char *msg, size_t len, int64_t id, bool modern)
{
	cr_assert_lt(F.nsent, MAXN);
	F.sent[F.nsent] = xstrndup(msg, len);
	F.sent_modern[F.nsent] = modern;
	F.sent_id[F.nsent++] = id;
	return F.send_rc;
}
static int f_send(void *ctx, const char *msg, size_t len, int64_t id)
{
	return f_record(msg, len, id, false);
}
static int f_send_modern(void *ctx, const char *msg, size_t len, int64_t id)
{
	return f_record(msg, len, id, true);
}
static void f_forget(void *ctx, int64_t id)
{
	F.forgot[F.forgets++] = id;
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
	.link_send_modern = f_send_modern,
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

/* A message from the runtime on the stream of our request related. */
static void runtime_on(int64_t related, const char *msg)
{
	relay_link_message(R, msg, strlen(msg), related);
}

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

static int host_count(const char *needle)
{
	int n = 0;
	for (int i = 0; i < F.nhost; i++)
		n += strstr(F.host[i], needle) != NULL;
	return n;
}

static int sent_find_from(int from, const char *needle)
{
	for (int i = from; i < F.nsent; i++)
		if (strstr(F.sent[i], needle))
			return i;
	return -1;
}

static int sent_count(const char *needle)
{
	int n = 0;
	for (int i = 0; i < F.nsent; i++)
		n += strstr(F.sent[i], needle) != NULL;
	return n;
}

/* Answers the request sent at index i with a result. */
static void answer_sent(int i, const char *result)
{
	char m[1024];
	snprintf(m, sizeof m, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}",
		 (long long)F.sent_id[i], result);
	runtime_on(F.sent_id[i], m);
}

#define META                                                                   \
	"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"              \
	"\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define MREQ(id, method, params)                                               \
	"{\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"" method              \
	"\",\"params\":{" params META "}}"
#define MCALL(id)                                                              \
	MREQ(id, "tools/call", "\"name\":\"demo__echo\",\"arguments\":{},")
#define MLIST(id) MREQ(id, "tools/list", "")
#define MLISTEN(id)                                                            \
	MREQ(id, "subscriptions/listen",                                       \
	     "\"notifications\":{\"toolsListChanged\":true},")
#define SUB "\"io.modelcontextprotocol/subscriptionId\":"

static const char init_line[] =
	"{\"jsonrpc\":\"2.0\",\"id\":\"i\",\"method\":\"initialize\","
	"\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
	"\"clientInfo\":{\"name\":\"host-x\",\"version\":\"1\"}}}";

/* The relay started and a runtime found; the host said nothing yet. */
static void setup(void)
{
	memset(&F, 0, sizeof F);
	now_ms = 1000;
	clock_set_source(fake_clock);
	R = relay_new(&ops, NULL);
	relay_start(R);
	relay_recovered(R, NULL);
	cr_assert(relay_live(R));
	cr_assert_eq(F.nsent, 0);
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

TestSuite(relay_modern, .init = setup, .fini = teardown);

/* The runtime loses the link and a new one is found. */
static void new_runtime(void)
{
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	relay_recovered(R, NULL);
}

Test(relay_modern, a_modern_request_needs_no_initialize)
{
	host(MREQ("\"d\"", "server/discover", ""));
	cr_assert_eq(F.nsent, 1, "sent at once: no initialize is waited for");
	cr_assert(F.sent_modern[0], "as a modern message");
	cr_assert(strstr(F.sent[0], "\"id\":1,"));
	cr_assert(strstr(F.sent[0], "2026-07-28"), "the _meta as the host's");
	answer_sent(0, "{\"supportedVersions\":[\"2026-07-28\"],"
		       "\"resultType\":\"complete\"}");
	cr_assert_str_eq(last_host(),
			 "{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"result\":{"
			 "\"supportedVersions\":[\"2026-07-28\"],"
			 "\"resultType\":\"complete\"}}");
	cr_assert_eq(relay_pending(R), 0);
}

/* A host that initialized once (a 2025 session to carry) and also sends
 * modern requests: after a loss, the modern ones go before our own
 * initialize of the new runtime is answered; the 2025 ones wait. */
Test(relay_modern, a_modern_request_does_not_wait_for_our_reinitialize)
{
	host(init_line);
	answer_sent(0, "{}");
	host("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	int before = F.nsent;
	relay_recovered(R, NULL);
	cr_assert_eq(F.nsent, before + 1);
	cr_assert(strstr(F.sent[before], "host-x"), "our initialize");
	host("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}");
	host(MLIST("6"));
	cr_assert_eq(F.nsent, before + 2, "only the modern one went");
	cr_assert(F.sent_modern[before + 1]);
	answer_sent(before, "{}");
	cr_assert_geq(sent_find_from(before + 2, "\"tools/list\"}"), 0,
		      "the 2025 one once the session is whole");
}

Test(relay_modern, errors_of_the_revision_are_answers)
{
	host(MCALL("7"));
	char m[512];
	snprintf(m, sizeof m,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32021,"
		 "\"message\":\"m\",\"data\":{\"requiredCapabilities\":{"
		 "\"elicitation\":{}}}}}",
		 (long long)F.sent_id[0]);
	runtime_on(F.sent_id[0], m);
	cr_assert_str_eq(last_host(),
			 "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":"
			 "-32021,\"message\":\"m\",\"data\":{"
			 "\"requiredCapabilities\":{\"elicitation\":{}}}}}");
	cr_assert_eq(F.recovers, 1, "no fault, no recovery");
	cr_assert_eq(relay_pending(R), 0);
}

/* input_required and its requestState pass untouched (only the id is
 * the host's), and the retry with the state goes as the host wrote it. */
Test(relay_modern, input_required_passes_byte_exact)
{
	host(MCALL("1"));
	/* Notifications of its stream first, as they come. */
	runtime_on(F.sent_id[0],
		   "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
		   "\"params\":{\"progressToken\":\"t\",\"progress\":1}}");
	cr_assert(strstr(last_host(), "\"progressToken\":\"t\""));
	static const char state[] = "\"st\\u00e9+/=\\\"x\"";
	char res[256];
	snprintf(res, sizeof res,
		 "{\"resultType\":\"input_required\",\"inputRequests\":{\"a\":"
		 "{\"method\":\"elicitation/create\",\"params\":{}}},"
		 "\"requestState\":%s}",
		 state);
	answer_sent(0, res);
	char want[512];
	snprintf(want, sizeof want,
		 "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":%s}", res);
	cr_assert_str_eq(last_host(), want);
	char retry[512];
	snprintf(retry, sizeof retry,
		 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"demo__elicit\",\"inputResponses\":{"
		 "\"a\":{\"action\":\"accept\"}},\"requestState\":%s," META
		 "}}",
		 state);
	host(retry);
	cr_assert(F.sent_modern[1]);
	cr_assert(strstr(F.sent[1], state), "the state as the host sent it");
}

Test(relay_modern, cancelled_drops_the_stream_and_answers_nothing)
{
	host(MCALL("\"c\""));
	int before = F.nsent, hbefore = F.nhost;
	host("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
	     "\"params\":{\"requestId\":\"c\"}}");
	cr_assert_eq(F.forgets, 1);
	cr_assert_eq(F.forgot[0], F.sent_id[0], "its stream dropped");
	cr_assert_eq(F.nsent, before, "nothing sent: the drop is the cancel");
	cr_assert_eq(F.nhost, hbefore, "no answer for it");
	cr_assert_eq(relay_pending(R), 0);
	/* What its stream still brings is nobody's. */
	answer_sent(0, "{}");
	cr_assert_eq(F.nhost, hbefore);
}

Test(relay_modern, a_listen_is_tagged_with_the_hosts_id)
{
	host(MLISTEN("\"L\""));
	cr_assert_eq(F.nsent, 1);
	cr_assert(F.sent_modern[0]);
	int64_t ours = F.sent_id[0];
	cr_assert_eq(relay_pending(R), 0,
		     "a listen has no answer to wait for at the host's end");
	char m[512];
	snprintf(m, sizeof m,
		 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
		 "subscriptions/acknowledged\",\"params\":{\"notifications\":{"
		 "\"toolsListChanged\":true},\"_meta\":{" SUB "%lld}}}",
		 (long long)ours);
	runtime_on(ours, m);
	cr_assert_str_eq(last_host(),
			 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
			 "subscriptions/acknowledged\",\"params\":{"
			 "\"notifications\":{\"toolsListChanged\":true},"
			 "\"_meta\":{" SUB "\"L\"}}}");
	snprintf(m, sizeof m,
		 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/"
		 "list_changed\",\"params\":{\"_meta\":{" SUB "%lld}}}",
		 (long long)ours);
	runtime_on(ours, m);
	cr_assert(strstr(last_host(), "tools/list_changed"));
	cr_assert(strstr(last_host(), SUB "\"L\""));
}

static void ack(int64_t ours)
{
	char m[512];
	snprintf(m, sizeof m,
		 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
		 "subscriptions/acknowledged\",\"params\":{\"notifications\":{"
		 "\"toolsListChanged\":true},\"_meta\":{" SUB "%lld}}}",
		 (long long)ours);
	runtime_on(ours, m);
}

static int64_t last_listen(void)
{
	for (int i = F.nsent - 1; i >= 0; i--)
		if (strstr(F.sent[i], "subscriptions/listen"))
			return F.sent_id[i];
	return -1;
}

Test(relay_modern, a_listen_is_sent_again_after_a_loss_without_a_second_ack)
{
	host(MLISTEN("9"));
	int64_t first = last_listen();
	ack(first);
	cr_assert_eq(host_count("acknowledged"), 1);
	new_runtime();
	cr_assert_eq(sent_count("subscriptions/listen"), 2,
		     "the relay listens again on the new runtime");
	int64_t second = last_listen();
	cr_assert_neq(second, first, "a request of its own");
	int hbefore = F.nhost;
	ack(second);
	cr_assert_eq(host_count("acknowledged"), 1,
		     "the host had its acknowledgement already");
	/* A change in the gap was told to nobody: the host hears it. */
	cr_assert_eq(F.nhost, hbefore + 1);
	cr_assert(strstr(last_host(), "tools/list_changed"));
	cr_assert(strstr(last_host(), SUB "9"));
	char m[256];
	snprintf(m, sizeof m,
		 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/"
		 "list_changed\",\"params\":{\"_meta\":{" SUB "%lld}}}",
		 (long long)second);
	runtime_on(second, m);
	cr_assert_eq(host_count("tools/list_changed"), 2);
	cr_assert(strstr(last_host(), SUB "9}"));
	cr_assert_eq(relay_pending(R), 0);
}

/* Lost before any runtime acknowledged it: the next one's is the host's
 * first, and it is written once. */
Test(relay_modern, a_listen_lost_before_its_ack_is_acked_by_the_next_runtime)
{
	host(MLISTEN("3"));
	new_runtime();
	ack(last_listen());
	cr_assert_eq(host_count("acknowledged"), 1);
	cr_assert_eq(host_count("list_changed"), 0, "no gap to tell of");
}

/* A listen whose stream ends while the runtime lives (the ping answers)
 * is sent again on the same runtime; an answer after the ack (the
 * runtime's session ended) too; past a few on one runtime, the host is
 * told. */
Test(relay_modern, a_listen_the_runtime_ends_is_sent_again_a_few_times)
{
	host(MLISTEN("4"));
	ack(last_listen());
	relay_link_lost(R, last_listen(), OUTBOX_CUT);
	cr_assert_eq(F.pings, 0, "a listen's end casts no doubt on calls");
	cr_assert_eq(F.recovers, 1);
	cr_assert_eq(sent_count("subscriptions/listen"), 2, "listened again");
	int64_t l = last_listen();
	char m[256];
	for (int i = 0; i < 2; i++) {
		snprintf(m, sizeof m,
			 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{"
			 "\"resultType\":\"complete\"}}",
			 (long long)l);
		runtime_on(l, m);
		l = last_listen();
	}
	cr_assert_eq(sent_count("subscriptions/listen"), 4);
	cr_assert_eq(host_count("\"id\":4"), 0, "the host's listen goes on");
	snprintf(m, sizeof m,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{"
		 "\"resultType\":\"complete\"}}",
		 (long long)l);
	runtime_on(l, m);
	cr_assert_eq(sent_count("subscriptions/listen"), 4);
	cr_assert(strstr(last_host(), "\"id\":4,"));
	cr_assert(strstr(last_host(), "again and again"));
	new_runtime();
	cr_assert_eq(sent_count("subscriptions/listen"), 4, "it ended");
}

/* An error answer to a listen (before its ack) is the host's answer. */
Test(relay_modern, a_refused_listen_is_answered)
{
	host(MLISTEN("\"x\""));
	int64_t l = last_listen();
	char m[256];
	snprintf(m, sizeof m,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32000,"
		 "\"message\":\"Too many listen streams\"}}",
		 (long long)l);
	runtime_on(l, m);
	cr_assert_str_eq(last_host(),
			 "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{"
			 "\"code\":-32000,\"message\":\"Too many listen "
			 "streams\"}}");
	new_runtime();
	cr_assert_eq(sent_count("subscriptions/listen"), 1);
}

Test(relay_modern, a_cancelled_listen_is_dropped_and_not_resumed)
{
	host(MLISTEN("5"));
	int64_t l = last_listen();
	ack(l);
	int hbefore = F.nhost;
	host("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
	     "\"params\":{\"requestId\":5}}");
	cr_assert_eq(F.forgets, 1);
	cr_assert_eq(F.forgot[0], l);
	cr_assert_eq(F.nhost, hbefore, "no answer");
	new_runtime();
	cr_assert_eq(sent_count("subscriptions/listen"), 1);
}

/* The resend rule, as for 2025 requests: a call that may have run is
 * answered, never written twice; a list and a call that never left go
 * again. */
Test(relay_modern, the_resend_rule_holds_for_modern_requests)
{
	host(MCALL("1")); /* ours 1: written, may have run */
	host(MLIST("2")); /* ours 2: changes nothing */
	host(MCALL("3")); /* ours 3: never left */
	relay_link_lost(R, 3, OUTBOX_UNWRITTEN);
	relay_link_fault(R, RELAY_FAULT_BROKEN, "stream", NULL, 0);
	cr_assert_eq(F.recovers, 2);
	int before = F.nsent;
	relay_recovered(R, NULL);
	int a = -1;
	for (int i = 0; i < F.nhost; i++)
		if (strstr(F.host[i], "may or may not have taken effect"))
			a = i;
	cr_assert_geq(a, 0);
	cr_assert(strstr(F.host[a], "\"id\":1,"));
	int calls = 0, lists = 0;
	for (int i = before; i < F.nsent; i++) {
		cr_assert(F.sent_modern[i]);
		cr_assert_neq(F.sent_id[i], 1, "the call that may have run");
		calls += strstr(F.sent[i], "tools/call") != NULL;
		lists += strstr(F.sent[i], "tools/list") != NULL;
	}
	cr_assert_eq(calls, 1, "only the unsent call goes again");
	cr_assert_eq(lists, 1);
	cr_assert_eq(F.nsent, before + 2, "no initialize for a modern host");
	cr_assert_eq(relay_pending(R), 2);
}

/* A cut stream on a live runtime: the rule too. */
Test(relay_modern, a_cut_modern_call_on_a_live_runtime_is_answered)
{
	host(MCALL("1"));
	relay_link_lost(R, 1, OUTBOX_CUT);
	relay_ping_done(R, true);
	cr_assert(strstr(last_host(), "may or may not"));
	cr_assert_eq(sent_count("tools/call"), 1);
}

/* A draining runtime refuses a request (503) while a call still runs and
 * a listen is open: the call is waited for, the listen is not (it never
 * ends by itself), then the next runtime gets both again. */
Test(relay_modern, a_hold_waits_for_calls_not_for_listens)
{
	host(MLISTEN("\"L\""));
	ack(last_listen());
	host(MCALL("1")); /* ours 2: running */
	host(MCALL("2")); /* ours 3: refused */
	relay_link_lost(R, 3, OUTBOX_REFUSED);
	cr_assert_eq(F.recovers, 1, "the running call is waited for");
	answer_sent(1, "{\"resultType\":\"complete\"}");
	cr_assert(strstr(last_host(), "\"id\":1,"));
	cr_assert_eq(F.recovers, 2, "then the runtime is left");
	relay_recovered(R, NULL);
	cr_assert_eq(sent_count("subscriptions/listen"), 2);
	cr_assert_geq(sent_find_from(3, "tools/call"), 0,
		      "the refused call goes to the next runtime");
}

/* A recovery that fails answers the listen too: the host's subscription
 * ended, and it may listen again. */
Test(relay_modern, a_failed_recovery_ends_the_listen)
{
	host(MLISTEN("\"L\""));
	ack(last_listen());
	relay_link_fault(R, RELAY_FAULT_BROKEN, "stream", NULL, 0);
	relay_recovered(R, "stop pid 42");
	cr_assert(strstr(last_host(), "\"id\":\"L\","));
	cr_assert(strstr(last_host(), "stop pid 42"));
	host(MLIST("1"));
	cr_assert_eq(F.recovers, 3);
	relay_recovered(R, NULL);
	cr_assert_eq(sent_count("subscriptions/listen"), 1, "not resumed");
}

/* An acknowledged listen waits through a long recovery; a request and a
 * listen not yet acknowledged are answered at the cap. */
Test(relay_modern, the_cap_answers_what_the_host_waits_on)
{
	host(MLISTEN("\"a\""));
	ack(last_listen());
	host(MLISTEN("\"b\""));
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	advance(RELAY_RECOVERY_CAP_MS);
	cr_assert_eq(host_count("still starting"), 1);
	cr_assert(strstr(last_host(), "\"id\":\"b\","));
	relay_recovered(R, NULL);
	cr_assert_eq(sent_count("subscriptions/listen"), 3,
		     "the acknowledged one resumes");
	cr_assert(strstr(F.sent[F.nsent - 1], "\"id\":"));
}

/* Both eras on one stdio: the 2025 session and modern requests side by
 * side, each sent its own way. */
Test(relay_modern, both_eras_on_one_stdio)
{
	host(init_line);
	cr_assert(!F.sent_modern[0]);
	host(MLIST("\"m\""));
	cr_assert(F.sent_modern[1], "not held for the initialize's answer");
	answer_sent(0, "{}");
	cr_assert(strstr(last_host(), "\"id\":\"i\","));
	host("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	host("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
	     "\"params\":{\"name\":\"demo__echo\"}}");
	cr_assert(!F.sent_modern[F.nsent - 1]);
	/* The 2025 call is cancelled the 2025 way. */
	host("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
	     "\"params\":{\"requestId\":7}}");
	cr_assert(strstr(F.sent[F.nsent - 1], "notifications/cancelled"));
	cr_assert(!F.sent_modern[F.nsent - 1]);
	answer_sent(1, "{\"tools\":[]}");
	cr_assert(strstr(last_host(), "\"id\":\"m\","));
	/* A modern initialize is no session's: not replayed. */
	host(MREQ("8", "initialize", ""));
	cr_assert(F.sent_modern[F.nsent - 1]);
	relay_link_fault(R, RELAY_FAULT_REFUSED, "refused", NULL, 0);
	int before = F.nsent;
	relay_recovered(R, NULL);
	cr_assert(strstr(F.sent[before], "host-x"),
		  "the 2025 session is initialized again as it was");
}

/* A version claim mcpc cannot put in a header (no version string) is the
 * request's fault: answered, and the runtime is not taken for lost. */
Test(relay_modern, a_claim_that_is_no_version_is_answered_not_a_loss)
{
	F.send_rc = -EINVAL;
	host("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\","
	     "\"params\":{\"_meta\":{\"io.modelcontextprotocol/"
	     "protocolVersion\":7}}}");
	F.send_rc = 0;
	cr_assert(strstr(last_host(), "\"id\":3,"));
	cr_assert(strstr(last_host(), "-32602"));
	cr_assert_eq(F.recovers, 1);
	cr_assert(relay_live(R));
	cr_assert_eq(relay_pending(R), 0);
}

/* A draining runtime (`mcpvisor restart`) ends the listen's stream and
 * takes no new connection while it finishes a call: the call's answer is
 * waited for (no ping that would fail on the closed listener and cut the
 * call), then the next runtime gets the listen. */
Test(relay_modern, a_listen_ended_by_a_drain_leaves_the_running_call_be)
{
	host(MLISTEN("\"L\""));
	ack(last_listen());
	host(MCALL("1")); /* ours 2: running */
	relay_link_lost(R, last_listen(), OUTBOX_CUT);
	int64_t again = last_listen();
	cr_assert_neq(again, 1);
	relay_link_lost(R, again, OUTBOX_UNWRITTEN); /* the listener closed */
	cr_assert_eq(F.pings, 0);
	cr_assert_eq(F.recovers, 1, "the running call is waited for");
	answer_sent(1, "{\"resultType\":\"complete\"}");
	cr_assert(strstr(last_host(), "\"id\":1,"));
	cr_assert_eq(host_count("may or may not"), 0);
	cr_assert_eq(F.recovers, 2, "then the next runtime");
	relay_recovered(R, NULL);
	cr_assert_eq(sent_count("subscriptions/listen"), 3);
	cr_assert_eq(host_count("acknowledged"), 1);
}
