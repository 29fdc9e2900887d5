/*
 * The allocation-free JSON scan of the forwarding path: member spans, its
 * verdict on valid and invalid text (checked against jansson), its depth
 * limit, and garbage that must never crash it.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/jsonscan.h"

static const char *const keys[] = {"jsonrpc", "id", "method", "params",
				   "result"};

static int scan(const char *text, struct jsonscan_span *sp)
{
	return jsonscan_members(text, strlen(text), keys, 5, sp);
}

static char *span_str(const char *text, const struct jsonscan_span *sp)
{
	return strndup(text + sp->off, sp->len);
}

Test(jsonscan, member_spans)
{
	const char *t =
		" {\"jsonrpc\":\"2.0\", \"id\" : 17,\"method\":\"tools/call\","
		"\"params\":{\"name\":\"a\\\"b\",\"x\":[1,{\"y\":null}]}} ";
	struct jsonscan_span sp[5];
	cr_assert_eq(scan(t, sp), 0);
	char *v = span_str(t, &sp[1]);
	cr_assert_str_eq(v, "17");
	free(v);
	v = span_str(t, &sp[2]);
	cr_assert_str_eq(v, "\"tools/call\"");
	free(v);
	v = span_str(t, &sp[3]);
	cr_assert_str_eq(v, "{\"name\":\"a\\\"b\",\"x\":[1,{\"y\":null}]}");
	free(v);
	cr_assert_eq(sp[4].len, 0, "absent member");
	long long id;
	cr_assert(jsonscan_int(t, &sp[1], &id));
	cr_assert_eq(id, 17);
	cr_assert(!jsonscan_int(t, &sp[2], &id), "a string is no integer");
}

/* Whitespace wherever JSON allows it, and a span that starts past it;
 * names that share a start with a key, or are one byte longer or shorter,
 * are not that key. */
Test(jsonscan, whitespace_anywhere_and_near_names)
{
	const char *t =
		"\t{ \"jsonrpcx\" : 1 ,\"jsonrp\":2, \"i\":3,\n"
		"\"id\" :\r\n [ 1 , { \"a\" : [ ] , \"b\" : { } } ,\t\"x\" ]"
		" , \"method\"\t:\t\"m\" }\n";
	struct jsonscan_span sp[5];
	cr_assert_eq(scan(t, sp), 0);
	cr_assert_eq(sp[0].len, 0, "jsonrpcx and jsonrp are not jsonrpc");
	char *v = span_str(t, &sp[1]);
	cr_assert_str_eq(v, "[ 1 , { \"a\" : [ ] , \"b\" : { } } ,\t\"x\" ]");
	free(v);
	v = span_str(t, &sp[2]);
	cr_assert_str_eq(v, "\"m\"");
	free(v);
	cr_assert_eq(jsonscan_members_strict(t, strlen(t), keys, 5, sp), 0);
	const char *bad[] = {"{ \"a\" : [ 1 , ] }", "{ \"a\" : 1 , }", "{ , }",
			     "{ \"a\" : [ , 1 ] }"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_lt(scan(bad[i], sp), 0, "%s", bad[i]);
}

Test(jsonscan, nested_names_do_not_match_and_last_duplicate_wins)
{
	const char *t = "{\"params\":{\"id\":1},\"id\":2,\"id\":3}";
	struct jsonscan_span sp[5];
	cr_assert_eq(scan(t, sp), 0);
	char *v = span_str(t, &sp[1]);
	cr_assert_str_eq(v, "3", "top level only, last one, as jansson");
	free(v);
	/* A name written with an escape never matches. */
	const char *e = "{\"i\\u0064\":5}";
	cr_assert_eq(scan(e, sp), 0);
	cr_assert_eq(sp[1].len, 0);
}

Test(jsonscan, integers)
{
	const char *ok[] = {"{\"id\":0}", "{\"id\":-5}",
			    "{\"id\":9223372036854775807}"};
	const char *no[] = {"{\"id\":1.5}", "{\"id\":1e3}",
			    "{\"id\":99999999999999999999}", "{\"id\":\"7\"}",
			    "{\"id\":true}"};
	struct jsonscan_span sp[5];
	long long v;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		cr_assert_eq(scan(ok[i], sp), 0, "%s", ok[i]);
		cr_assert(jsonscan_int(ok[i], &sp[1], &v), "%s", ok[i]);
	}
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
		cr_assert_eq(scan(no[i], sp), 0, "%s", no[i]);
		cr_assert(!jsonscan_int(no[i], &sp[1], &v), "%s", no[i]);
	}
	/* The edges of int64, and spans that are no number, read as strtoll
	 * reads them. */
	const struct {
		const char *text;
		bool ok;
		long long v;
	} edge[] = {
		{"9223372036854775807", true, LLONG_MAX},
		{"9223372036854775808", false, 0},
		{"-9223372036854775808", true, LLONG_MIN},
		{"-9223372036854775809", false, 0},
		{"18446744073709551616", false, 0},
		{"-0", true, 0},
		{"42", true, 42},
		{"-17", true, -17},
		{"-", false, 0},
		{"--1", false, 0},
		{"1-", false, 0},
		{"", false, 0},
	};
	for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
		struct jsonscan_span one = {0, strlen(edge[i].text)};
		v = 12345;
		cr_assert_eq(jsonscan_int(edge[i].text, &one, &v), edge[i].ok,
			     "%s", edge[i].text);
		if (edge[i].ok)
			cr_assert_eq(v, edge[i].v, "%s", edge[i].text);
	}
}

/* The scan and jansson agree on what is one valid JSON object. */
Test(jsonscan, agrees_with_jansson)
{
	const char *cases[] = {
		"{}",
		"{\"a\":1}",
		"{\"a\":[]}",
		"{\"a\":[1,2,]}",
		"{\"a\":1,}",
		"{,}",
		"{\"a\" 1}",
		"{\"a\":01}",
		"{\"a\":-}",
		"{\"a\":1.}",
		"{\"a\":.5}",
		"{\"a\":1e}",
		"{\"a\":1E+2}",
		"{\"a\":tru}",
		"{\"a\":nul}",
		"{\"a\":\"\\x\"}",
		"{\"a\":\"\\u12\"}",
		"{\"a\":\"\\u12g4\"}",
		"{\"a\":\"tab\there\"}",
		"{\"a\":\"ok\\n\"}",
		"{\"a\":{\"b\":{\"c\":[true,false,null]}}}",
		"[1]",
		"\"x\"",
		"{\"a\":1}}",
		"{\"a\":1} x",
		"{\"a\"",
		"",
		"   ",
		"{\"a\":[{]}",
	};
	struct jsonscan_span sp[5];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *j = json_loads(cases[i], 0, NULL);
		bool jansson_ok = json_is_object(j);
		json_decref(j);
		bool scan_ok = scan(cases[i], sp) == 0;
		cr_assert_eq(scan_ok, jansson_ok, "%s: scan %d, jansson %d",
			     cases[i], scan_ok, jansson_ok);
	}
}

Test(jsonscan, depth_limit)
{
	char deep[4 * JSONSCAN_MAX_DEPTH + 16];
	size_t n = 0;
	deep[n++] = '{';
	deep[n++] = '"';
	deep[n++] = 'a';
	deep[n++] = '"';
	deep[n++] = ':';
	for (int i = 0; i < JSONSCAN_MAX_DEPTH + 5; i++)
		deep[n++] = '[';
	for (int i = 0; i < JSONSCAN_MAX_DEPTH + 5; i++)
		deep[n++] = ']';
	deep[n++] = '}';
	struct jsonscan_span sp[5];
	cr_assert_lt(jsonscan_members(deep, n, keys, 5, sp), 0,
		     "refused past the depth limit, not a stack overflow");
}

Test(jsonscan, garbage_never_crashes)
{
	srand(7);
	const char alphabet[] = "{}[]\":,\\0123456789.-+eEtrufalsn \t\nabc";
	char buf[256];
	struct jsonscan_span sp[5];
	unsigned accepted = 0;
	for (int round = 0; round < 20000; round++) {
		size_t n = (size_t)(rand() % (int)sizeof buf);
		for (size_t i = 0; i < n; i++)
			buf[i] = rand() % 4 == 0
					 ? (char)(rand() % 256)
					 : alphabet[rand() %
						    (sizeof alphabet - 1)];
		if (jsonscan_members(buf, n, keys, 5, sp) == 0) {
			accepted++;
			for (int k = 0; k < 5; k++)
				cr_assert_leq(sp[k].off + sp[k].len, n);
		}
	}
	/* Mutations of a valid message: some pass, none crash. */
	const char *base = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":[1,"
			   "\"x\",true]}}";
	size_t bn = strlen(base);
	for (int round = 0; round < 20000; round++) {
		memcpy(buf, base, bn);
		buf[rand() % (int)bn] =
			alphabet[rand() % (sizeof alphabet - 1)];
		size_t n = bn - (size_t)(rand() % 3);
		if (jsonscan_members(buf, n, keys, 5, sp) == 0)
			accepted++;
	}
	cr_assert_gt(accepted, 0, "the loop reaches valid text too");
}

static int scan_strict(const char *text, struct jsonscan_span *sp)
{
	return jsonscan_members_strict(text, strlen(text), keys, 5, sp);
}

/* What jansson refuses inside values by default, the strict scan refuses
 * too: a client's text passed on unparsed is never text the server cannot
 * read. (The plain scan, for servers' lines, still takes it.) */
Test(jsonscan, strict_refuses_what_jansson_refuses_in_values)
{
	const char *cases[] = {
		"{\"a\":\"bad \xff\xfe utf8\"}",
		"{\"a\":\"\xc0\xaf\"}",		/* overlong '/' */
		"{\"a\":\"\xe0\x80\xaf\"}",	/* overlong, 3 bytes */
		"{\"a\":\"\xed\xa0\x80\"}",	/* a surrogate in UTF-8 */
		"{\"a\":\"\xf4\x90\x80\x80\"}", /* past U+10FFFF */
		"{\"a\":\"\xe2\x82\"}",		/* cut short */
		"{\"a\":\"a\\u0000b\"}",
		"{\"a\":\"\\ud800\"}",
		"{\"a\":\"\\ud800x\"}",
		"{\"a\":\"\\ud800\\u0041\"}",
		"{\"a\":\"\\udc00\"}",
		"{\"a\":1e999}",
		"{\"a\":-1e999}",
		"{\"a\":1.5e400}",
		"{\"a\":123456789012345678901234567890}",
		"{\"a\":9223372036854775808}",
		"{\"a\":-9223372036854775809}",
		"{\"a\":0.0000000000000000000000000000000000000000001e400}",
	};
	const char *fine[] = {
		"{\"a\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}",
		"{\"a\":\"\\ud83d\\ude00\"}",
		"{\"a\":\"\\u0001\\uffff\"}",
		"{\"a\":9223372036854775807}",
		"{\"a\":-9223372036854775808}",
		"{\"a\":1e307}",
		"{\"a\":1e-999}",
		"{\"a\":0e999999}",
		"{\"a\":0.000001e310}",
		"{\"a\":12345678901234567890.5}",
	};
	struct jsonscan_span sp[5];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *j = json_loads(cases[i], 0, NULL);
		cr_assert_null(j, "jansson refuses %s", cases[i]);
		cr_assert_lt(scan_strict(cases[i], sp), 0, "strict refuses %s",
			     cases[i]);
		cr_assert_eq(scan(cases[i], sp), 0, "plain takes %s", cases[i]);
	}
	for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
		json_t *j = json_loads(fine[i], 0, NULL);
		cr_assert_not_null(j, "jansson takes %s", fine[i]);
		json_decref(j);
		cr_assert_eq(scan_strict(fine[i], sp), 0, "strict takes %s",
			     fine[i]);
	}
}

/* The router reads names at two levels; there the scan must find what
 * jansson finds, or refuse: no escaped names, no repeated ones. */
Test(jsonscan, strict_refuses_escaped_and_repeated_names)
{
	const char *no[] = {
		"{\"method\":\"a\",\"m\\u0065thod\":\"b\"}",
		"{\"m\\u0065thod\":\"b\"}",
		"{\"id\":1,\"id\":2}",
		"{\"x\":1,\"y\":2,\"x\":3}",
		"{\"a\\\"b\":1}",
		"{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,"
		"\"h\":8,\"i\":9,\"j\":10,\"k\":11,\"l\":12,\"m\":13,\"n\":14,"
		"\"o\":15,\"p\":16,\"q\":17}",
	};
	struct jsonscan_span sp[5];
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
		cr_assert_eq(scan(no[i], sp), 0, "plain scan takes %s", no[i]);
		cr_assert_lt(scan_strict(no[i], sp), 0, "strict refuses %s",
			     no[i]);
	}
	/* Nested objects may do as they like: the server reads them as
	 * jansson would, and the router does not read them. */
	const char *t = "{\"id\":1,\"params\":{\"a\":1,\"a\":2,\"\\u0061\":3}}";
	cr_assert_eq(scan_strict(t, sp), 0);
}

/* Differential: on random messages built from names and values that
 * tempt a disagreement, whenever the strict scan accepts, jansson accepts
 * and reads the very same member values. */
Test(jsonscan, strict_scan_agrees_with_jansson)
{
	static const char *const names[] = {
		"\"id\"",     "\"method\"",  "\"m\\u0065thod\"",
		"\"params\"", "\"jsonrpc\"", "\"result\"",
		"\"x\"",      "\"i\\u0064\""};
	static const char *const values[] = {"1",
					     "\"a\"",
					     "\"\\ud800\"",
					     "1e999",
					     "\"\xff\"",
					     "{\"id\":2}",
					     "[1,\"\\u0000\"]",
					     "null",
					     "-0.5e-3",
					     "\"\\u00e9\"",
					     "99999999999999999999",
					     "\"\xc3\xa9\""};
	srand(11);
	char buf[512];
	struct jsonscan_span sp[5];
	unsigned agreed = 0;
	for (int round = 0; round < 20000; round++) {
		size_t n = 0;
		buf[n++] = '{';
		int members = rand() % 5;
		for (int m = 0; m < members; m++) {
			const char *k = names[rand() % 8];
			const char *v = values[rand() % 12];
			n += (size_t)snprintf(buf + n, sizeof buf - n,
					      "%s%s:%s", m ? "," : "", k, v);
		}
		buf[n++] = '}';
		buf[n] = '\0';
		json_t *j = json_loadb(buf, n, 0, NULL);
		if (jsonscan_members_strict(buf, n, keys, 5, sp) == 0) {
			cr_assert_not_null(j, "jansson refuses %s", buf);
			for (int k = 0; k < 5; k++) {
				json_t *jv = json_object_get(j, keys[k]);
				cr_assert_eq(jv != NULL, sp[k].len > 0,
					     "member %s of %s", keys[k], buf);
				if (jv == NULL)
					continue;
				json_t *sv =
					json_loadb(buf + sp[k].off, sp[k].len,
						   JSON_DECODE_ANY, NULL);
				cr_assert(json_equal(jv, sv), "%s of %s",
					  keys[k], buf);
				json_decref(sv);
			}
			agreed++;
		}
		json_decref(j);
	}
	cr_assert_gt(agreed, 100);
}

/* One pass for a member's object too: the same spans (relative to the
 * whole text) and the same verdict as scanning that object alone, strict
 * at both levels. */
static int nested(const char *t, struct jsonscan_span *sp,
		  struct jsonscan_span *in)
{
	static const char *const top[] = {"jsonrpc", "id", "method", "params"};
	static const char *const inner[] = {"name", "_meta"};
	const struct jsonscan_level lv[] = {{top, 4, sp, 3}, {inner, 2, in, 0}};
	return jsonscan_levels_strict(t, strlen(t), lv, 2);
}

Test(jsonscan, nested_members_in_one_pass)
{
	const char *t =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		"\"params\":{\"arguments\":{\"name\":9},\"name\":\"x\"}}";
	struct jsonscan_span sp[4], in[2], alone[2];
	cr_assert_eq(nested(t, sp, in), 0);
	char *v = span_str(t, &in[0]);
	cr_assert_str_eq(v, "\"x\"", "the inner name, not the argument's");
	free(v);
	cr_assert_eq(in[1].len, 0);
	static const char *const inner[] = {"name", "_meta"};
	cr_assert_eq(jsonscan_members_strict(t + sp[3].off, sp[3].len, inner, 2,
					     alone),
		     0);
	cr_assert_eq(alone[0].off + sp[3].off, in[0].off);
	cr_assert_eq(alone[0].len, in[0].len);

	/* The inner level is held to the strict rules too. */
	cr_assert_eq(nested("{\"params\":{\"name\":1,\"name\":2}}", sp, in),
		     -1);
	cr_assert_eq(nested("{\"params\":{\"n\\u0061me\":1}}", sp, in), -1);
	/* Not an object: nothing inside is reported. */
	cr_assert_eq(nested("{\"params\":[{\"name\":1}]}", sp, in), 0);
	cr_assert_eq(in[0].len, 0);
	/* params twice is refused at the top, as before. */
	cr_assert_eq(nested("{\"params\":{\"name\":1},\"params\":{}}", sp, in),
		     -1);
	/* Three levels: the innermost spans are offsets in the text too. */
	static const char *const k1[] = {"p"}, *const k2[] = {"m"},
				 *const k3[] = {"v"};
	struct jsonscan_span s1[1], s2[1], s3[1];
	const struct jsonscan_level three[] = {
		{k1, 1, s1, 0}, {k2, 1, s2, 0}, {k3, 1, s3, 0}};
	const char *t3 = "{\"p\":{\"v\":0,\"m\":{\"v\":42}}}";
	cr_assert_eq(jsonscan_levels_strict(t3, strlen(t3), three, 3), 0);
	v = span_str(t3, &s3[0]);
	cr_assert_str_eq(v, "42");
	free(v);
	/* A nest naming no member is refused. */
	const struct jsonscan_level bad[] = {{k1, 1, s1, 1}, {k2, 1, s2, 0}};
	cr_assert_eq(jsonscan_levels_strict(t3, strlen(t3), bad, 2), -1);
	/* Too many keys for one scan. */
	const char *many[JSONSCAN_MAX_KEYS + 1] = {"a"};
	struct jsonscan_span big[JSONSCAN_MAX_KEYS + 1];
	for (size_t i = 1; i <= JSONSCAN_MAX_KEYS; i++)
		many[i] = "b";
	cr_assert_eq(jsonscan_members("{}", 2, (const char *const *)many,
				      JSONSCAN_MAX_KEYS + 1, big),
		     -1);
}
