/*
 * The 2026-07-28 request envelope: which era a message speaks, every
 * fault a modern request can have with the HTTP status and JSON-RPC error
 * it gets, in the order the conformance suite probes them; the header
 * value sentinel both ways; the Mcp-Param-* headers of x-mcp-header
 * arguments and the schema rules; and the per-request log level.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/envelope.h"
#include "jsonrpc/jsonrpc.h"

/* ---- a request's headers, looked up by lowercase name ---- */

#define MAX_HDRS 16

struct hdrs {
	const char *name[MAX_HDRS];
	const char *value[MAX_HDRS];
	int n;
	int lookups; /* names asked for that are not lowercase */
};

static const char *hget(void *arg, const char *lname)
{
	struct hdrs *h = arg;
	for (const char *p = lname; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			h->lookups++;
	for (int i = 0; i < h->n; i++)
		if (strcmp(h->name[i], lname) == 0)
			return h->value[i];
	return NULL;
}

/* name, value, ..., NULL */
static struct hdrs hset(const char *name, ...)
{
	struct hdrs h = {.n = 0};
	va_list ap;
	va_start(ap, name);
	for (const char *k = name; k; k = va_arg(ap, const char *)) {
		cr_assert_lt(h.n, MAX_HDRS);
		h.name[h.n] = k;
		h.value[h.n] = va_arg(ap, const char *);
		h.n++;
	}
	va_end(ap);
	return h;
}

#define V "2026-07-28"
#define K_PV "\"io.modelcontextprotocol/protocolVersion\""
#define K_CAPS "\"io.modelcontextprotocol/clientCapabilities\""
#define K_INFO "\"io.modelcontextprotocol/clientInfo\""
#define K_LOG "\"io.modelcontextprotocol/logLevel\""
#define META_OK                                                                \
	"\"_meta\":{" K_PV ":\"" V "\"," K_CAPS ":{\"sampling\":{}}," K_INFO   \
	":{\"name\":\"t\",\"version\":\"1\"}}"

static json_t *load(const char *text)
{
	json_error_t e;
	json_t *m = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	cr_assert_not_null(m, "bad test JSON: %s (%s)", e.text, text);
	return m;
}

/* A request of method with params (without braces) and META_OK. */
static json_t *req(const char *method, const char *params)
{
	char text[4096];
	snprintf(text, sizeof text,
		 "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"%s\","
		 "\"params\":{%s%s" META_OK "}}",
		 method, params, *params ? "," : "");
	return load(text);
}

static int check(json_t *msg, struct hdrs *h, struct envelope *env,
		 struct envelope_err *err)
{
	int rc = envelope_check(msg, hget, h, env, err);
	cr_assert_eq(h->lookups, 0, "a header name asked for in upper case");
	if (rc < 0) {
		cr_assert_not_null(err->message);
		/* Fit for a JSON string, and short whatever came in. */
		json_t *s = json_string(err->message);
		cr_assert_not_null(s, "message not UTF-8: %s", err->message);
		json_decref(s);
		cr_assert_lt(strlen(err->message), 600, "long: %s",
			     err->message);
	}
	return rc;
}

/* msg (taken) with h must fail with status and code, its message
 * containing has (NULL: anything). */
static void expect_fault(json_t *msg, struct hdrs h, int status, int code,
			 const char *has)
{
	struct envelope env;
	struct envelope_err err = {0};
	cr_assert_eq(check(msg, &h, &env, &err), -1, "accepted: %s",
		     json_dumps(msg, 0));
	cr_assert_eq(err.http_status, status, "status %d (%s)", err.http_status,
		     err.message);
	cr_assert_eq(err.code, code, "code %d (%s)", err.code, err.message);
	if (has)
		cr_assert(strstr(err.message, has), "'%s' lacks '%s'",
			  err.message, has);
	cr_assert_null(env.method, "env filled on a fault");
	envelope_err_clear(&err);
	cr_assert_null(err.message);
	json_decref(msg);
}

static void expect_ok(json_t *msg, struct hdrs h, struct envelope *env)
{
	struct envelope_err err = {0};
	int rc = check(msg, &h, env, &err);
	cr_assert_eq(rc, 0, "refused (%d %d): %s", err.http_status, err.code,
		     err.message);
	cr_assert_null(err.message);
	cr_assert_null(err.data);
}

/* As expect_ok, for a message (taken) nothing more is read from. */
static void accepted(json_t *msg, struct hdrs h)
{
	struct envelope env;
	expect_ok(msg, h, &env);
	json_decref(msg);
}

#define STD(m) "mcp-protocol-version", V, "mcp-method", m

/* ---- era ---- */

Test(envelope, classify_by_claim_then_header)
{
	json_t *modern = req("tools/list", "");
	cr_assert_eq(envelope_classify(modern, NULL), ENVELOPE_MODERN);
	/* The claim decides, whatever the header says. */
	cr_assert_eq(envelope_classify(modern, "2025-11-25"), ENVELOPE_MODERN);
	json_decref(modern);
	json_t *odd =
		load("{\"method\":\"x\",\"params\":{\"_meta\":{" K_PV ":17}}}");
	cr_assert_eq(envelope_classify(odd, NULL), ENVELOPE_MODERN);
	json_decref(odd);

	json_t *legacy = load("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			      "\"tools/list\",\"params\":{\"_meta\":{"
			      "\"progressToken\":1}}}");
	cr_assert_eq(envelope_classify(legacy, NULL), ENVELOPE_LEGACY);
	const char *olds[] = {"2024-11-05", "2025-03-26",    "2025-06-18",
			      "2025-11-25", " 2025-11-25\t", ""};
	for (size_t i = 0; i < sizeof olds / sizeof *olds; i++)
		cr_assert_eq(envelope_classify(legacy, olds[i]),
			     ENVELOPE_LEGACY, "%s", olds[i]);
	/* Any other version in the header, with no claim, is modern: it
	 * gets the missing-keys answer, not the 2025 path. */
	const char *news[] = {V, "v999.0.0", "2025-11-26", "2025-11-25x",
			      "a-very-long-version-name-that-is-none-of-"
			      "the-legacy-ones"};
	for (size_t i = 0; i < sizeof news / sizeof *news; i++)
		cr_assert_eq(envelope_classify(legacy, news[i]),
			     ENVELOPE_MODERN, "%s", news[i]);
	/* Older than every revision: the 2025 path names it unsupported. */
	const char *older[] = {"1999-01-01", "2024-01-01", "2025-11-24"};
	for (size_t i = 0; i < sizeof older / sizeof *older; i++)
		cr_assert_eq(envelope_classify(legacy, older[i]),
			     ENVELOPE_LEGACY, "%s", older[i]);
	json_decref(legacy);

	json_t *batch = load("[{\"method\":\"ping\"}]");
	cr_assert_eq(envelope_classify(batch, NULL), ENVELOPE_LEGACY);
	cr_assert_eq(envelope_classify(batch, V), ENVELOPE_MODERN);
	json_decref(batch);
	cr_assert_eq(envelope_classify(NULL, NULL), ENVELOPE_LEGACY);
}

/* ---- a well-formed request ---- */

Test(envelope, a_well_formed_request_is_described)
{
	struct envelope env;
	json_t *m = load("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":"
			 "\"tools/list\",\"params\":{\"_meta\":{" K_PV ":\"" V
			 "\"," K_CAPS ":{\"elicitation\":{}}," K_INFO
			 ":{\"name\":\"c\",\"version\":\"2\"}," K_LOG
			 ":\"warning\",\"progressToken\":\"p1\"}}}");
	expect_ok(m, hset(STD("tools/list"), NULL), &env);
	cr_assert_str_eq(env.method, "tools/list");
	cr_assert_str_eq(env.version, MODERN_VERSION);
	cr_assert(json_is_object(
		json_object_get(env.client_caps, "elicitation")));
	cr_assert_str_eq(
		json_string_value(json_object_get(env.client_info, "name")),
		"c");
	cr_assert_eq(env.log_level, ENVELOPE_LOG_WARNING);
	cr_assert_str_eq(json_string_value(env.progress_token), "p1");
	cr_assert_not(env.notification);
	json_decref(m);
}

Test(envelope, client_info_is_optional)
{
	/* sep-2575-request-meta-client-info-optional */
	struct envelope env;
	json_t *m = load("{\"jsonrpc\":\"2.0\",\"id\":105,\"method\":"
			 "\"server/discover\",\"params\":{\"_meta\":{" K_PV
			 ":\"" V "\"," K_CAPS ":{}}}}");
	expect_ok(m, hset(STD("server/discover"), NULL), &env);
	cr_assert_null(env.client_info);
	cr_assert_eq(json_object_size(env.client_caps), 0);
	cr_assert_eq(env.log_level, ENVELOPE_LOG_NONE);
	cr_assert_null(env.progress_token);
	json_decref(m);
}

Test(envelope, every_request_of_the_revision_passes)
{
	static const struct {
		const char *method, *params, *name;
	} ok[] = {
		{"server/discover", "", NULL},
		{"completion/complete",
		 "\"ref\":{\"type\":\"ref/prompt\",\"name\":\"p\"}", NULL},
		{"prompts/get", "\"name\":\"p\"", "p"},
		{"prompts/list", "", NULL},
		{"resources/list", "", NULL},
		{"resources/templates/list", "", NULL},
		{"resources/read", "\"uri\":\"file:///a b\"", "file:///a b"},
		{"subscriptions/listen",
		 "\"notifications\":{\"toolsListChanged\":true}", NULL},
		{"tools/call", "\"name\":\"t\",\"arguments\":{}", "t"},
		{"tools/list", "\"cursor\":\"c\"", NULL},
	};
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		struct envelope env;
		struct hdrs h =
			hset(STD(ok[i].method), "mcp-name", ok[i].name, NULL);
		if (ok[i].name == NULL)
			h.n--;
		json_t *m = req(ok[i].method, ok[i].params);
		expect_ok(m, h, &env);
		cr_assert_str_eq(env.method, ok[i].method);
		json_decref(m);
	}
}

/* ---- the order the conformance suite probes (server-stateless) ---- */

Test(envelope, no_version_header_comes_first)
{
	expect_fault(req("tools/list", ""),
		     hset("mcp-method", "tools/list", NULL), 400,
		     JR_HEADER_MISMATCH, "MCP-Protocol-Version");
	/* Before the missing _meta keys. */
	expect_fault(load("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			  "\"server/discover\",\"params\":{}}"),
		     hset("mcp-method", "server/discover", NULL), 400,
		     JR_HEADER_MISMATCH, "MCP-Protocol-Version");
}

Test(envelope, missing_meta_keys_are_named)
{
	/* missing-meta: params {} */
	expect_fault(load("{\"jsonrpc\":\"2.0\",\"id\":101,\"method\":"
			  "\"server/discover\",\"params\":{}}"),
		     hset(STD("server/discover"), NULL), 400, JR_INVALID_PARAMS,
		     META_PROTOCOL_VERSION " and " META_CLIENT_CAPS);
	/* no params at all */
	expect_fault(load("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			  "\"tools/list\"}"),
		     hset(STD("tools/list"), NULL), 400, JR_INVALID_PARAMS,
		     META_CLIENT_CAPS);
	/* missing-protocol-version */
	struct envelope_err err = {0};
	struct envelope env;
	json_t *m =
		load("{\"jsonrpc\":\"2.0\",\"id\":102,\"method\":"
		     "\"server/discover\",\"params\":{\"_meta\":{" K_CAPS
		     ":{}," K_INFO ":{\"name\":\"c\",\"version\":\"1\"}}}}");
	struct hdrs h = hset(STD("server/discover"), NULL);
	cr_assert_eq(check(m, &h, &env, &err), -1);
	cr_assert_eq(err.code, JR_INVALID_PARAMS);
	cr_assert_eq(err.http_status, 400);
	cr_assert(strstr(err.message, META_PROTOCOL_VERSION));
	cr_assert_null(strstr(err.message, META_CLIENT_CAPS));
	envelope_err_clear(&err);
	json_decref(m);
	/* missing-client-capabilities */
	expect_fault(load("{\"jsonrpc\":\"2.0\",\"id\":104,\"method\":"
			  "\"server/discover\",\"params\":{\"_meta\":{" K_PV
			  ":\"" V "\"}}}"),
		     hset(STD("server/discover"), NULL), 400, JR_INVALID_PARAMS,
		     META_CLIENT_CAPS);
}

Test(envelope, header_and_claim_must_agree_before_the_version_is_judged)
{
	/* Header 2026-07-28, claim v999.0.0: a mismatch, not -32022. */
	expect_fault(load("{\"jsonrpc\":\"2.0\",\"id\":302,\"method\":"
			  "\"server/discover\",\"params\":{\"_meta\":{" K_PV
			  ":\"v999.0.0\"," K_CAPS ":{}}}}"),
		     hset(STD("server/discover"), NULL), 400,
		     JR_HEADER_MISMATCH, "'v999.0.0'");
	/* Surrounding spaces of the header do not count. */
	accepted(req("tools/list", ""), hset("mcp-protocol-version", " " V "\t",
					     "mcp-method", "tools/list", NULL));
}

Test(envelope, an_unsupported_version_lists_the_supported_one)
{
	struct envelope env;
	struct envelope_err err = {0};
	json_t *m = load("{\"jsonrpc\":\"2.0\",\"id\":301,\"method\":"
			 "\"server/discover\",\"params\":{\"_meta\":{" K_PV
			 ":\"v999.0.0\"," K_CAPS ":{}," K_INFO
			 ":{\"name\":\"c\",\"version\":\"1\"}}}}");
	struct hdrs h = hset("mcp-protocol-version", "v999.0.0", "mcp-method",
			     "server/discover", NULL);
	cr_assert_eq(check(m, &h, &env, &err), -1);
	cr_assert_eq(err.http_status, 400);
	cr_assert_eq(err.code, JR_UNSUPPORTED_VERSION);
	json_t *want = json_pack("{s:[s],s:s}", "supported", V, "requested",
				 "v999.0.0");
	cr_assert(json_equal(err.data, want), "data %s",
		  json_dumps(err.data, 0));
	json_decref(want);
	envelope_err_clear(&err);
	cr_assert_null(err.data);
	json_decref(m);

	/* A legacy version claimed in a modern envelope is unsupported
	 * there too. */
	m = load("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
		 "\"params\":{\"_meta\":{" K_PV ":\"2025-11-25\"," K_CAPS
		 ":{}}}}");
	h = hset("mcp-protocol-version", "2025-11-25", "mcp-method",
		 "tools/list", NULL);
	cr_assert_eq(check(m, &h, &env, &err), -1);
	cr_assert_eq(err.code, JR_UNSUPPORTED_VERSION);
	cr_assert_str_eq(
		json_string_value(json_object_get(err.data, "requested")),
		"2025-11-25");
	envelope_err_clear(&err);
	json_decref(m);
}

Test(envelope, meta_key_types)
{
	const char *bad[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
		"\"params\":{\"_meta\":[]}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
		"\"params\":{\"_meta\":{" K_PV ":20260728," K_CAPS ":{}}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
		"\"params\":{\"_meta\":{" K_PV ":\"" V "\"," K_CAPS ":[]}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
		"\"params\":{\"_meta\":{" K_PV ":\"" V "\"," K_CAPS ":null}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
		"\"params\":{\"_meta\":{" K_PV ":\"" V "\"," K_CAPS
		":{}," K_INFO ":\"me\"}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
		"\"params\":{\"_meta\":{" K_PV ":\"" V "\"," K_CAPS
		":{}," K_INFO ":null}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
		"\"params\":{\"_meta\":{" K_PV ":\"" V "\"," K_CAPS
		":{},\"progressToken\":{}}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
		"\"params\":[1]}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		expect_fault(load(bad[i]), hset(STD("tools/list"), NULL), 400,
			     JR_INVALID_PARAMS, NULL);
	/* A numeric progress token is fine. */
	struct envelope env;
	json_t *m = load("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			 "\"tools/list\",\"params\":{\"_meta\":{" K_PV ":\"" V
			 "\"," K_CAPS ":{},\"progressToken\":3}}}");
	expect_ok(m, hset(STD("tools/list"), NULL), &env);
	cr_assert_eq(json_integer_value(env.progress_token), 3);
	json_decref(m);
}

Test(envelope, log_level_is_one_of_eight_names)
{
	static const char *names[] = {"debug",	 "info",     "notice",
				      "warning", "error",    "critical",
				      "alert",	 "emergency"};
	for (int i = 0; i < 8; i++) {
		char p[256];
		snprintf(p, sizeof p,
			 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			 "\"tools/list\",\"params\":{\"_meta\":{" K_PV ":\"" V
			 "\"," K_CAPS ":{}," K_LOG ":\"%s\"}}}",
			 names[i]);
		struct envelope env;
		json_t *m = load(p);
		expect_ok(m, hset(STD("tools/list"), NULL), &env);
		cr_assert_eq(env.log_level, (enum envelope_log)i);
		json_decref(m);
	}
	const char *bad[] = {"\"verbose\"", "\"DEBUG\"", "3", "null",
			     "\"debug\\u0000x\""};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char p[256];
		snprintf(p, sizeof p,
			 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			 "\"tools/list\",\"params\":{\"_meta\":{" K_PV ":\"" V
			 "\"," K_CAPS ":{}," K_LOG ":%s}}}",
			 bad[i]);
		expect_fault(load(p), hset(STD("tools/list"), NULL), 400,
			     JR_INVALID_PARAMS, "logLevel");
	}
	/* Judged after the version. */
	expect_fault(load("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			  "\"tools/list\",\"params\":{\"_meta\":{" K_PV
			  ":\"v2\"," K_CAPS ":{}," K_LOG ":\"loud\"}}}"),
		     hset("mcp-protocol-version", "v2", "mcp-method",
			  "tools/list", NULL),
		     400, JR_UNSUPPORTED_VERSION, NULL);
}

Test(envelope, not_a_request_at_all)
{
	const char *bad[] = {
		"[1,2]",
		"\"tools/list\"",
		"{\"jsonrpc\":\"2.0\",\"id\":1}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",
		"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"tools/list\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"tools/list\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"tools/list\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		expect_fault(load(bad[i]), hset(STD("tools/list"), NULL), 400,
			     JR_INVALID_REQUEST, NULL);
}

/* ---- methods ---- */

Test(envelope, removed_and_unknown_methods_are_404)
{
	/* server-stateless group 5, each with a valid _meta. */
	const char *gone[] = {"initialize",
			      "ping",
			      "logging/setLevel",
			      "resources/subscribe",
			      "resources/unsubscribe",
			      "unknown/method",
			      "notifications/initialized",
			      "tools/List"};
	for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
		expect_fault(req(gone[i], ""), hset(STD(gone[i]), NULL), 404,
			     JR_METHOD_NOT_FOUND, gone[i]);
	/* What happened is said. */
	expect_fault(req("ping", ""), hset(STD("ping"), NULL), 404,
		     JR_METHOD_NOT_FOUND, "not part of MCP " V);
	expect_fault(req("unknown/method", ""),
		     hset(STD("unknown/method"), NULL), 404,
		     JR_METHOD_NOT_FOUND, "not found");
	/* The method is judged before the Mcp-Method header. */
	expect_fault(req("initialize", ""),
		     hset("mcp-protocol-version", V, NULL), 404,
		     JR_METHOD_NOT_FOUND, NULL);
}

Test(envelope, initialize_under_a_modern_header_without_claim)
{
	/* The TypeScript SDK answers a 2025 handshake sent with a modern
	 * header -32020, not -32602. */
	expect_fault(load("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			  "\"initialize\",\"params\":{\"protocolVersion\":"
			  "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":"
			  "{\"name\":\"c\",\"version\":\"1\"}}}"),
		     hset(STD("initialize"), NULL), 400, JR_HEADER_MISMATCH,
		     "initialize");
}

/* ---- Mcp-Method and Mcp-Name (http-header-validation) ---- */

Test(envelope, mcp_method_is_required_and_exact)
{
	expect_fault(req("tools/list", ""),
		     hset("mcp-protocol-version", V, NULL), 400,
		     JR_HEADER_MISMATCH, "Mcp-Method header missing");
	expect_fault(req("tools/list", ""), hset(STD("prompts/list"), NULL),
		     400, JR_HEADER_MISMATCH, "'prompts/list'");
	/* Values are case-sensitive. */
	expect_fault(req("tools/list", ""), hset(STD("TOOLS/LIST"), NULL), 400,
		     JR_HEADER_MISMATCH, "Mcp-Method");
	accepted(req("tools/list", ""), hset(STD(" tools/list\t "), NULL));
	accepted(req("tools/list", ""),
		 hset(STD("=?base64?dG9vbHMvbGlzdA==?="), NULL));
}

Test(envelope, mcp_name_follows_name_or_uri)
{
	const char *call = "\"name\":\"get_weather\",\"arguments\":{}";
	expect_fault(req("tools/call", call), hset(STD("tools/call"), NULL),
		     400, JR_HEADER_MISMATCH, "Mcp-Name header missing");
	expect_fault(
		req("tools/call", call),
		hset(STD("tools/call"), "mcp-name", "wrong_tool_name", NULL),
		400, JR_HEADER_MISMATCH, "'wrong_tool_name'");
	/* RFC 9110: surrounding whitespace is not part of the value. */
	accepted(req("tools/call", call),
		 hset(STD("tools/call"), "mcp-name", "  get_weather  ", NULL));
	accepted(req("prompts/get", "\"name\":\"greet\""),
		 hset(STD("prompts/get"), "mcp-name", "greet", NULL));
	expect_fault(req("prompts/get", "\"name\":\"greet\""),
		     hset(STD("prompts/get"), "mcp-name", "greeT", NULL), 400,
		     JR_HEADER_MISMATCH, NULL);
	accepted(req("resources/read", "\"uri\":\"test://static-text\""),
		 hset(STD("resources/read"), "mcp-name", "test://static-text",
		      NULL));
	expect_fault(req("resources/read", "\"uri\":\"test://a\""),
		     hset(STD("resources/read"), "mcp-name", "a", NULL), 400,
		     JR_HEADER_MISMATCH, NULL);
	/* A name outside visible ASCII comes as a sentinel. */
	accepted(req("tools/call", "\"name\":\"caf\xc3\xa9\""),
		 hset(STD("tools/call"), "mcp-name",
		      "=?base64?Y2Fmw6k=?=", NULL));
	expect_fault(req("tools/call", "\"name\":\"caf\xc3\xa9\""),
		     hset(STD("tools/call"), "mcp-name", "caf\xc3\xa9", NULL),
		     400, JR_HEADER_MISMATCH, "not a valid value");
	/* The body's name must be a string. */
	expect_fault(req("tools/call", "\"name\":5"),
		     hset(STD("tools/call"), "mcp-name", "5", NULL), 400,
		     JR_INVALID_PARAMS, "params.name");
	expect_fault(req("resources/read", ""),
		     hset(STD("resources/read"), "mcp-name", "x", NULL), 400,
		     JR_INVALID_PARAMS, "params.uri");
	/* Other methods have no Mcp-Name to match. */
	accepted(req("tools/list", ""),
		 hset(STD("tools/list"), "mcp-name", "anything", NULL));
}

Test(envelope, long_and_hostile_headers_give_short_plain_messages)
{
	size_t n = ENVELOPE_MAX_HEADER + 1;
	char *big = malloc(n + 1);
	memset(big, 'a', n);
	big[n] = '\0';
	expect_fault(req("tools/call", "\"name\":\"t\""),
		     hset(STD("tools/call"), "mcp-name", big, NULL), 400,
		     JR_HEADER_MISMATCH, "longer than");
	expect_fault(req("tools/list", ""),
		     hset("mcp-protocol-version", big, "mcp-method",
			  "tools/list", NULL),
		     400, JR_HEADER_MISMATCH, "longer than");
	/* Just under the limit: quoted in part. */
	big[5000] = '\0';
	struct envelope env;
	struct envelope_err err = {0};
	json_t *m = req("tools/call", "\"name\":\"t\"");
	struct hdrs h = hset(STD("tools/call"), "mcp-name", big, NULL);
	cr_assert_eq(check(m, &h, &env, &err), -1);
	cr_assert(strstr(err.message, "aaaa...'"), "%s", err.message);
	cr_assert_lt(strlen(err.message), 300);
	envelope_err_clear(&err);
	json_decref(m);
	free(big);
	/* Control bytes are shown, never sent, and a name with a quote
	 * and a newline in the body stays one line. */
	m = req("tools/call", "\"name\":\"x\\n'y\\u001b[2J\"");
	h = hset(STD("tools/call"), "mcp-name", "z", NULL);
	cr_assert_eq(check(m, &h, &env, &err), -1);
	cr_assert_null(strchr(err.message, '\n'));
	cr_assert_null(strchr(err.message, '\x1b'));
	cr_assert(strstr(err.message, "\\x1b[2J"), "%s", err.message);
	envelope_err_clear(&err);
	json_decref(m);
	/* A cut never splits a character (the 64th byte is the first of
	 * an "\xc3\xa9"). */
	char uni[200] = "a";
	for (int i = 0; i < 40; i++)
		strcat(uni, "\xc3\xa9");
	char body[512];
	snprintf(body, sizeof body, "\"name\":\"%s\"", uni);
	m = req("tools/call", body);
	h = hset(STD("tools/call"), "mcp-name", "z", NULL);
	cr_assert_eq(check(m, &h, &env, &err), -1);
	cr_assert(strstr(err.message, "\xc3\xa9..."), "%s", err.message);
	cr_assert_null(strstr(err.message, "\\x"), "%s", err.message);
	envelope_err_clear(&err);
	json_decref(m);
}

/* ---- notifications ---- */

Test(envelope, notifications)
{
	struct envelope env;
	json_t *m = load("{\"jsonrpc\":\"2.0\",\"method\":"
			 "\"notifications/cancelled\",\"params\":{"
			 "\"requestId\":1}}");
	expect_ok(m, hset("mcp-protocol-version", V, NULL), &env);
	cr_assert(env.notification);
	cr_assert_null(env.client_caps);
	cr_assert_str_eq(env.method, "notifications/cancelled");
	json_decref(m);
	/* With its Mcp-Method, which must then match. */
	m = load("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}");
	expect_ok(m, hset(STD("notifications/x"), NULL), &env);
	json_decref(m);
	expect_fault(load("{\"jsonrpc\":\"2.0\",\"method\":"
			  "\"notifications/x\"}"),
		     hset(STD("notifications/y"), NULL), 400,
		     JR_HEADER_MISMATCH, NULL);
	/* The version header is still required and judged. */
	expect_fault(load("{\"jsonrpc\":\"2.0\",\"method\":"
			  "\"notifications/x\"}"),
		     hset("mcp-method", "notifications/x", NULL), 400,
		     JR_HEADER_MISMATCH, "MCP-Protocol-Version");
	expect_fault(load("{\"jsonrpc\":\"2.0\",\"method\":"
			  "\"notifications/x\"}"),
		     hset("mcp-protocol-version", "v9", NULL), 400,
		     JR_UNSUPPORTED_VERSION, NULL);
	/* A request method without an id. */
	expect_fault(load("{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\","
			  "\"params\":{" META_OK "}}"),
		     hset(STD("tools/list"), NULL), 400, JR_INVALID_REQUEST,
		     "tools/list");
}

Test(envelope, a_fault_leaves_nothing_behind)
{
	struct envelope env;
	struct envelope_err err;
	memset(&err, 0xa5, sizeof err); /* as a caller's stack might be */
	json_t *m = req("tools/list", "");
	struct hdrs h = hset(STD("tools/list"), NULL);
	cr_assert_eq(check(m, &h, &env, &err), 0);
	cr_assert_null(err.message);
	envelope_err_clear(&err);
	envelope_err_clear(NULL);
	json_decref(m);
	cr_assert_eq(envelope_check(NULL, hget, &h, &env, &err), -1);
	cr_assert_eq(err.code, JR_INVALID_REQUEST);
	envelope_err_clear(&err);
	/* No header function: no headers. */
	m = req("tools/list", "");
	cr_assert_eq(envelope_check(m, NULL, NULL, &env, &err), -1);
	cr_assert_eq(err.code, JR_HEADER_MISMATCH);
	envelope_err_clear(&err);
	json_decref(m);
}

/* ---- the sentinel ---- */

static void dec(const char *raw, const char *want)
{
	char *got = envelope_header_decode(raw);
	if (want == NULL)
		cr_assert_null(got, "'%s' decoded to '%s'", raw, got);
	else
		cr_assert(got && strcmp(got, want) == 0,
			  "'%s' decoded to '%s', not '%s'", raw,
			  got ? got : "(null)", want);
	free(got);
}

static void enc(const char *s, const char *want)
{
	char *got = envelope_header_encode(s);
	cr_assert_str_eq(got, want, "encode('%s')", s);
	free(got);
}

Test(envelope, the_spec_examples_both_ways)
{
	/* streamable-http.mdx, Value Encoding. */
	static const char *const table[][2] = {
		{"us-west1", "us-west1"},
		{"Hello, \xe4\xb8\x96\xe7\x95\x8c",
		 "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
	};
	for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
		enc(table[i][0], table[i][1]);
		dec(table[i][1], table[i][0]);
	}
}

Test(envelope, decode_as_the_conformance_suite_asks)
{
	/* http-custom-header-server-validation */
	dec("=?base64?SGVsbG8=?=", "Hello");
	dec("=?base64?SGVsbG8?=", NULL);	       /* padding missing */
	dec("=?base64?SGVs!!!bG8=?=", NULL);	       /* not the alphabet */
	dec("SGVsbG8=", "SGVsbG8=");		       /* no prefix: literal */
	dec("=?base64?SGVsbG8=", "=?base64?SGVsbG8="); /* no suffix */
}

Test(envelope, decode_rules)
{
	dec(NULL, NULL);
	dec("", "");
	dec("  \t ", "");
	dec(" a b\t", "a b");
	dec("=?base64?\?=", "");
	dec("=?base64?=", NULL); /* head and tail overlap */
	dec("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="); /* markers exact */
	dec(" =?base64?SGVsbG8=?= ", "Hello");
	dec("=?base64?SGVsbG9=?=", NULL); /* stray bits */
	dec("=?base64?SGVsbA==?=", "Hell");
	dec("=?base64?SGVsbB==?=", NULL);  /* stray bits */
	dec("=?base64?SG=sbG8=?=", NULL);  /* padding inside */
	dec("=?base64?SGVsbG8==?=", NULL); /* too much padding */
	dec("=?base64?====?=", NULL);
	dec("=?base64?SGVs bG8=?=", NULL);
	dec("=?base64?SGVsbG8-?=", NULL); /* base64url is not it */
	dec("=?base64?AA==?=", NULL);	  /* a NUL */
	dec("=?base64?/w==?=", NULL);	  /* not UTF-8 */
	dec("=?base64?7aCA?=", NULL);	  /* a surrogate */
	dec("=?base64?wIA=?=", NULL);	  /* overlong */
	dec("=?base64?Pz8/?=", "???");
	dec("a\x01z", NULL);
	dec("a\x7fz", NULL);
	dec("caf\xc3\xa9", NULL);
	dec("a\r\nb", NULL);
	size_t n = ENVELOPE_MAX_HEADER;
	char *big = malloc(n + 2);
	memset(big, 'x', n + 1);
	big[n] = '\0';
	char *got = envelope_header_decode(big);
	cr_assert_not_null(got);
	free(got);
	big[n] = 'x';
	big[n + 1] = '\0';
	dec(big, NULL);
	free(big);
}

Test(envelope, encode_rules)
{
	enc("", "");
	enc("a b", "a b");
	enc("a\tb", "=?base64?YQli?=");
	enc(" a", "=?base64?IGE=?=");
	enc("a ", "=?base64?YSA=?=");
	enc("=?base64?\?=", "=?base64?PT9iYXNlNjQ/Pz0=?=");
	enc("=?base64?=", "=?base64?PT9iYXNlNjQ/PQ==?=");
	enc("=?base64", "=?base64");
	enc("x\x7f", "=?base64?eH8=?=");
	enc(NULL, "");
}

Test(envelope, every_value_round_trips)
{
	/* Each single byte, and mixes of text a client may send. */
	for (int c = 1; c < 128; c++) {
		char s[4] = {'a', (char)c, (char)c, '\0'};
		for (int k = 0; k < 3; k++) {
			const char *v = s + (k == 2 ? 1 : 0);
			char one[2] = {(char)c, '\0'};
			if (k == 1)
				v = one;
			char *e = envelope_header_encode(v);
			char *d = envelope_header_decode(e);
			cr_assert(d && strcmp(d, v) == 0, "byte %d form %d", c,
				  k);
			free(e);
			free(d);
		}
	}
	const char *samples[] = {
		"tools/call",
		"file:///home/me/My Documents/a.txt",
		"\xf0\x9f\x98\x80 emoji",
		"  leading",
		"trailing\t",
		"=?base64?SGVsbG8=?=",
		"=?base64?",
		"?=",
		"\xe2\x80\xae\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d",
		"a\"b\\c'd",
	};
	for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
		char *e = envelope_header_encode(samples[i]);
		for (const char *p = e; *p; p++)
			cr_assert(*p >= 0x20 && *p < 0x7f, "'%s' sent as '%s'",
				  samples[i], e);
		char *d = envelope_header_decode(e);
		cr_assert(d && strcmp(d, samples[i]) == 0, "'%s' -> '%s'",
			  samples[i], e);
		free(e);
		free(d);
	}
}

/* ---- Mcp-Param-* ---- */

static const char *const schema_text =
	"{\"type\":\"object\",\"properties\":{"
	"\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
	"\"count\":{\"type\":\"integer\",\"x-mcp-header\":\"Count\"},"
	"\"flag\":{\"type\":\"boolean\",\"x-mcp-header\":\"Flag\"},"
	"\"nested\":{\"type\":\"object\",\"properties\":{"
	"\"zone\":{\"type\":[\"string\",\"null\"],\"x-mcp-header\":\"Zone\"}}},"
	"\"query\":{\"type\":\"string\"}},\"required\":[\"query\"]}";

static int params(const char *args, struct hdrs h, struct envelope_err *err)
{
	json_t *schema = load(schema_text);
	cr_assert(envelope_schema_ok(schema));
	json_t *a = args ? load(args) : NULL;
	int rc = envelope_check_params(schema, a, hget, &h, err);
	cr_assert_eq(h.lookups, 0, "a header name asked for in upper case");
	json_decref(a);
	json_decref(schema);
	if (rc < 0) {
		cr_assert_not_null(err->message);
		json_t *s = json_string(err->message);
		cr_assert_not_null(s);
		json_decref(s);
	}
	return rc;
}

static void params_ok(const char *args, struct hdrs h)
{
	struct envelope_err err = {0};
	int rc = params(args, h, &err);
	cr_assert_eq(rc, 0, "refused %s: %s", args ? args : "(null)",
		     err.message);
	cr_assert_null(err.message);
}

static void params_fault(const char *args, struct hdrs h, int code,
			 const char *has)
{
	struct envelope_err err = {0};
	cr_assert_eq(params(args, h, &err), -1, "accepted %s",
		     args ? args : "(null)");
	cr_assert_eq(err.http_status, 400);
	cr_assert_eq(err.code, code, "%d: %s", err.code, err.message);
	if (has)
		cr_assert(strstr(err.message, has), "'%s' lacks '%s'",
			  err.message, has);
	envelope_err_clear(&err);
}

Test(envelope, params_present_and_matching)
{
	params_ok("{\"region\":\"us-west1\",\"count\":42,\"flag\":true,"
		  "\"nested\":{\"zone\":\"b\"},\"query\":\"q\"}",
		  hset("mcp-param-region", "us-west1", "mcp-param-count", "42",
		       "mcp-param-flag", "true", "mcp-param-zone", " b ",
		       NULL));
	/* Nothing marked is sent: no header expected, and none sent. */
	params_ok("{\"query\":\"q\"}", hset(NULL));
	params_ok("{\"region\":null,\"nested\":{\"zone\":null}}", hset(NULL));
	params_ok(NULL, hset(NULL));
	params_ok("[1]", hset(NULL));
	params_ok("{\"nested\":5}", hset(NULL));
	/* No schema, nothing to check. */
	struct envelope_err err = {0};
	struct hdrs h = hset("mcp-param-region", "x", NULL);
	cr_assert_eq(envelope_check_params(NULL, NULL, hget, &h, &err), 0);
}

Test(envelope, params_missing_extra_or_different)
{
	params_fault("{\"region\":\"us-west1\"}", hset(NULL),
		     JR_HEADER_MISMATCH, "Mcp-Param-Region header missing");
	params_fault("{\"nested\":{\"zone\":\"b\"}}", hset(NULL),
		     JR_HEADER_MISMATCH, "Mcp-Param-Zone");
	params_fault("{\"query\":\"q\"}", hset("mcp-param-region", "x", NULL),
		     JR_HEADER_MISMATCH, "absent");
	params_fault("{\"region\":null}", hset("mcp-param-region", "x", NULL),
		     JR_HEADER_MISMATCH, "absent");
	params_fault("{\"region\":\"us-west1\"}",
		     hset("mcp-param-region", "us-east1", NULL),
		     JR_HEADER_MISMATCH, "'us-east1'");
	params_fault("{\"region\":\"us-west1\"}",
		     hset("mcp-param-region", "US-WEST1", NULL),
		     JR_HEADER_MISMATCH, NULL);
	params_fault("{\"region\":{\"a\":1}}",
		     hset("mcp-param-region", "x", NULL), JR_INVALID_PARAMS,
		     "'region'");
	size_t n = ENVELOPE_MAX_HEADER + 1;
	char *big = malloc(n + 1);
	memset(big, 'r', n);
	big[n] = '\0';
	params_fault("{\"region\":\"r\"}", hset("mcp-param-region", big, NULL),
		     JR_HEADER_MISMATCH, "longer than");
	free(big);
}

Test(envelope, params_through_the_sentinel)
{
	/* http-custom-header-server-validation, in its order. */
	params_ok("{\"region\":\"Hello\"}",
		  hset("mcp-param-region", "=?base64?SGVsbG8=?=", NULL));
	params_fault("{\"region\":\"Hello\"}",
		     hset("mcp-param-region", "=?base64?SGVsbG8?=", NULL),
		     JR_HEADER_MISMATCH, "not a valid value");
	params_fault("{\"region\":\"Hello\"}",
		     hset("mcp-param-region", "=?base64?SGVs!!!bG8=?=", NULL),
		     JR_HEADER_MISMATCH, "not a valid value");
	params_ok("{\"region\":\"SGVsbG8=\"}",
		  hset("mcp-param-region", "SGVsbG8=", NULL));
	params_ok("{\"region\":\"=?base64?SGVsbG8=\"}",
		  hset("mcp-param-region", "=?base64?SGVsbG8=", NULL));
	params_fault("{\"region\":\"test-value\"}", hset(NULL),
		     JR_HEADER_MISMATCH, "missing");
	/* Raw bytes outside visible ASCII are refused, not compared. */
	params_fault("{\"region\":\"caf\xc3\xa9\"}",
		     hset("mcp-param-region", "caf\xc3\xa9", NULL),
		     JR_HEADER_MISMATCH, "not a valid value");
	params_ok("{\"region\":\"caf\xc3\xa9\"}",
		  hset("mcp-param-region", "=?base64?Y2Fmw6k=?=", NULL));
	/* A body string with a NUL can never match. */
	params_fault("{\"region\":\"a\\u0000b\"}",
		     hset("mcp-param-region", "a", NULL), JR_HEADER_MISMATCH,
		     NULL);
}

Test(envelope, params_numbers_and_booleans)
{
	static const char *same42[] = {"42",	 "42.0", "4.2e1",
				       "420e-1", "042",	 " 42 "};
	for (size_t i = 0; i < sizeof same42 / sizeof *same42; i++)
		params_ok("{\"count\":42}",
			  hset("mcp-param-count", same42[i], NULL));
	static const char *not42[] = {"43",
				      "42.5",
				      "forty-two",
				      "",
				      "0x2a",
				      "+42",
				      "42.",
				      ".42e2",
				      "4 2",
				      "42e",
				      "=?base64?NDI=?=x",
				      "1e999"};
	for (size_t i = 0; i < sizeof not42 / sizeof *not42; i++)
		params_fault("{\"count\":42}",
			     hset("mcp-param-count", not42[i], NULL),
			     JR_HEADER_MISMATCH, NULL);
	params_ok("{\"count\":-7}", hset("mcp-param-count", "-7", NULL));
	params_ok("{\"count\":42}",
		  hset("mcp-param-count", "=?base64?NDI=?=", NULL));
	params_ok("{\"count\":9007199254740991}",
		  hset("mcp-param-count", "9007199254740991", NULL));
	params_fault("{\"count\":9007199254740991}",
		     hset("mcp-param-count", "9007199254740992", NULL),
		     JR_HEADER_MISMATCH, NULL);
	params_fault("{\"count\":1}",
		     hset("mcp-param-count", "99999999999999999999", NULL),
		     JR_HEADER_MISMATCH, NULL);
	params_ok("{\"count\":2.5}", hset("mcp-param-count", "2.50", NULL));
	/* A string argument is compared as a string. */
	params_fault("{\"region\":\"42\"}",
		     hset("mcp-param-region", "42.0", NULL), JR_HEADER_MISMATCH,
		     NULL);
	params_ok("{\"flag\":true}", hset("mcp-param-flag", "true", NULL));
	params_ok("{\"flag\":false}", hset("mcp-param-flag", "false", NULL));
	static const char *nottrue[] = {"True", "TRUE", "1", "yes", "false"};
	for (size_t i = 0; i < sizeof nottrue / sizeof *nottrue; i++)
		params_fault("{\"flag\":true}",
			     hset("mcp-param-flag", nottrue[i], NULL),
			     JR_HEADER_MISMATCH, "argument 'flag' (true)");
}

/* ---- x-mcp-header in a schema ---- */

static bool schema_ok(const char *text)
{
	json_t *s = load(text);
	bool ok = envelope_schema_ok(s);
	json_decref(s);
	return ok;
}

#define PROP(type, name)                                                       \
	"{\"type\":\"object\",\"properties\":{\"p\":{\"type\":" type           \
	",\"x-mcp-header\":" name "}}}"

Test(envelope, schema_types_and_names)
{
	cr_assert(envelope_schema_ok(NULL));
	cr_assert(schema_ok("{\"type\":\"object\"}"));
	cr_assert(schema_ok(schema_text));
	cr_assert(schema_ok(PROP("\"string\"", "\"A-b_c.1~!#$%&'*+^`|\"")));
	cr_assert(schema_ok(PROP("\"integer\"", "\"N\"")));
	cr_assert(schema_ok(PROP("\"boolean\"", "\"B\"")));
	cr_assert(schema_ok(PROP("[\"null\",\"integer\"]", "\"N\"")));
	cr_assert_not(schema_ok(PROP("\"number\"", "\"N\"")));
	cr_assert_not(schema_ok(PROP("\"object\"", "\"N\"")));
	cr_assert_not(schema_ok(PROP("\"array\"", "\"N\"")));
	cr_assert_not(schema_ok(PROP("[\"string\",\"integer\"]", "\"N\"")));
	cr_assert_not(schema_ok(PROP("[\"null\"]", "\"N\"")));
	cr_assert_not(schema_ok(PROP("[]", "\"N\"")));
	cr_assert_not(schema_ok("{\"properties\":{\"p\":{\"x-mcp-header\":"
				"\"N\"}}}")); /* no type */
	cr_assert_not(schema_ok(PROP("\"string\"", "\"\"")));
	cr_assert_not(schema_ok(PROP("\"string\"", "\"Two Words\"")));
	cr_assert_not(schema_ok(PROP("\"string\"", "\"a:b\"")));
	cr_assert_not(schema_ok(PROP("\"string\"", "\"a\\r\\nb\"")));
	cr_assert_not(schema_ok(PROP("\"string\"", "\"caf\xc3\xa9\"")));
	cr_assert_not(schema_ok(PROP("\"string\"", "7")));
	cr_assert_not(schema_ok(PROP("\"string\"", "null")));
	/* Unique without regard to case, nested ones included. */
	cr_assert_not(schema_ok(
		"{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":"
		"\"Region\"},\"b\":{\"type\":\"object\",\"properties\":{\"c\":{"
		"\"type\":\"string\",\"x-mcp-header\":\"REGION\"}}}}}"));
	/* Not on the schema's root. */
	cr_assert_not(
		schema_ok("{\"type\":\"object\",\"x-mcp-header\":\"R\"}"));
}

Test(envelope, schema_reach_only_through_properties)
{
	const char *bad[] = {
		"{\"type\":\"array\",\"items\":" PROP("\"string\"",
						      "\"A\"") "}",
		"{\"type\":\"array\",\"items\":[" PROP("\"string\"",
						       "\"A\"") "]}",
		"{\"properties\":{\"l\":{\"type\":\"array\",\"items\":{"
		"\"type\":\"string\",\"x-mcp-header\":\"A\"}}}}",
		"{\"anyOf\":[" PROP("\"string\"", "\"A\"") "]}",
		"{\"oneOf\":[{\"type\":\"string\",\"x-mcp-header\":\"A\"}]}",
		"{\"allOf\":[" PROP("\"string\"", "\"A\"") "]}",
		"{\"not\":" PROP("\"string\"", "\"A\"") "}",
		"{\"if\":" PROP("\"string\"", "\"A\"") "}",
		"{\"then\":" PROP("\"string\"", "\"A\"") "}",
		"{\"else\":" PROP("\"string\"", "\"A\"") "}",
		"{\"$defs\":{\"d\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}"
		"}}",
		"{\"definitions\":{\"d\":" PROP("\"string\"", "\"A\"") "}}",
		"{\"patternProperties\":{\"^a\":{\"type\":\"string\","
		"\"x-mcp-header\":\"A\"}}}",
		"{\"additionalProperties\":{\"type\":\"string\","
		"\"x-mcp-header\":\"A\"}}",
		"{\"properties\":{\"o\":{\"type\":\"object\","
		"\"additionalProperties\":{\"type\":\"string\","
		"\"x-mcp-header\":\"A\"}}}}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		cr_assert_not(schema_ok(bad[i]), "accepted %s", bad[i]);
	/* A property named x-mcp-header, and the word in data, are not
	 * annotations. */
	cr_assert(schema_ok("{\"properties\":{\"x-mcp-header\":{\"type\":"
			    "\"object\"}}}"));
	cr_assert(schema_ok("{\"properties\":{\"a\":{\"type\":\"object\","
			    "\"default\":{\"x-mcp-header\":\"x y\"},"
			    "\"examples\":[{\"x-mcp-header\":1}],"
			    "\"enum\":[{\"x-mcp-header\":[]}]}}}"));
	/* Deep through properties is fine. */
	cr_assert(schema_ok("{\"properties\":{\"a\":{\"type\":\"object\","
			    "\"properties\":{\"b\":{\"type\":\"object\","
			    "\"properties\":{\"c\":{\"type\":\"boolean\","
			    "\"x-mcp-header\":\"C\"}}}}}}}"));
}

Test(envelope, schema_limits)
{
	/* ENVELOPE_MAX_PARAMS annotations pass, one more does not. */
	for (int n = ENVELOPE_MAX_PARAMS; n <= ENVELOPE_MAX_PARAMS + 1; n++) {
		json_t *props = json_object();
		for (int i = 0; i < n; i++) {
			char name[16];
			snprintf(name, sizeof name, "P%d", i);
			json_object_set_new(props, name,
					    json_pack("{s:s,s:s}", "type",
						      "string", "x-mcp-header",
						      name));
		}
		json_t *s = json_pack("{s:o}", "properties", props);
		cr_assert_eq(envelope_schema_ok(s), n <= ENVELOPE_MAX_PARAMS);
		json_decref(s);
	}
	/* Nesting past the limit, even unmarked, is refused; up to it,
	 * fine. */
	for (int d = ENVELOPE_MAX_SCHEMA_DEPTH - 1;
	     d <= ENVELOPE_MAX_SCHEMA_DEPTH + 1; d++) {
		json_t *s = json_pack("{s:s}", "type", "string");
		for (int i = 0; i < d; i++)
			s = json_pack("{s:o}", "items", s);
		cr_assert_eq(envelope_schema_ok(s),
			     d <= ENVELOPE_MAX_SCHEMA_DEPTH, "depth %d", d);
		json_decref(s);
	}
}

/* ---- log levels ---- */

Test(envelope, log_levels)
{
	static const char *names[] = {"debug",	 "info",     "notice",
				      "warning", "error",    "critical",
				      "alert",	 "emergency"};
	for (int w = ENVELOPE_LOG_DEBUG; w <= ENVELOPE_LOG_EMERGENCY; w++)
		for (int l = 0; l < 8; l++)
			cr_assert_eq(envelope_log_passes((enum envelope_log)w,
							 names[l]),
				     l >= w, "want %d level %s", w, names[l]);
	for (int l = 0; l < 8; l++)
		cr_assert_not(envelope_log_passes(ENVELOPE_LOG_NONE, names[l]));
	/* A level of unknown weight: only to one that asked for all. */
	cr_assert(envelope_log_passes(ENVELOPE_LOG_DEBUG, "verbose"));
	cr_assert(envelope_log_passes(ENVELOPE_LOG_DEBUG, NULL));
	cr_assert_not(envelope_log_passes(ENVELOPE_LOG_INFO, "verbose"));
	cr_assert_not(envelope_log_passes(ENVELOPE_LOG_ERROR, "ERROR"));
	cr_assert_not(envelope_log_passes(ENVELOPE_LOG_NONE, "verbose"));
}
