/*
 * The allocation-free JSON scan of the forwarding path: member spans, its
 * verdict on valid and invalid text (checked against jansson), its depth
 * limit, and garbage that must never crash it.
 */
#include <criterion/criterion.h>
#include <jansson.h>
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
