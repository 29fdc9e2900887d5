/*
 * Unit tests for the JSONC reader (config/jsonc.c) and text edits
 * (config/jsonc_edit.c): comments and trailing commas read, refused in
 * strict mode, plain JSON read as jansson reads it, errors with line and
 * column, the depth limit, the spans of members; edits that keep every
 * byte but the members they drop, set or add, with commas, blank lines
 * and the text's own layout (tabs, inline arrays, minified, CRLF) right.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/jsonc.h"
#include "config/jsonc_edit.h"
#include "util/xmalloc.h"

static struct jsonc *tj_parse(const char *text, int flags)
{
	struct jsonc *j = NULL;
	struct jsonc_error e;
	int rc = jsonc_parse(text, strlen(text), flags, &j, &e);
	cr_assert_eq(rc, 0, "%s: line %d, column %d: %s", text, e.line,
		     e.column, e.text);
	return j;
}

static json_t *tj_json(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
	cr_assert_not_null(v, "bad test JSON: %s", e.text);
	return v;
}

Test(jsonc, comments_and_trailing_commas)
{
	struct jsonc *j = tj_parse("// head\n{ /* a */ \"a\": [1, 2,], // x\n"
				   "\"b\": {\"c\": \"//not a comment\",},\n}\n"
				   "/* tail */",
				   0);
	json_t *want = tj_json("{\"a\": [1, 2], \"b\": {\"c\": \"//not a "
			       "comment\"}}");
	cr_assert(json_equal(jsonc_root(j)->value, want));
	cr_assert_not(jsonc_is_plain(j));
	json_decref(want);
	jsonc_free(j);
	j = tj_parse("[1,]", 0);
	cr_assert_not(jsonc_is_plain(j), "a trailing comma");
	jsonc_free(j);
}

static void tj_refused(const char *text, int flags, int line, int column,
		       const char *says)
{
	struct jsonc *j = NULL;
	struct jsonc_error e;
	cr_assert_eq(jsonc_parse(text, strlen(text), flags, &j, &e), -EINVAL,
		     "%s was read", text);
	cr_assert_null(j);
	cr_assert(strstr(e.text, says), "%s: %s", text, e.text);
	cr_assert_eq(e.line, line, "%s: line %d", text, e.line);
	cr_assert_eq(e.column, column, "%s: column %d", text, e.column);
}

Test(jsonc, strict_is_plain_json)
{
	tj_refused("{\n  // x\n  \"a\": 1\n}", JSONC_STRICT, 2, 3, "comment");
	tj_refused("{\"a\": [1,\n 2,\n]}", JSONC_STRICT, 2, 3,
		   "comma before ]");
	tj_refused("{\"a\": 1,}", JSONC_STRICT, 1, 8, "comma before }");
	tj_refused("\xEF\xBB\xBF{}", JSONC_STRICT, 1, 1, "value");
	struct jsonc *j = tj_parse("\xEF\xBB\xBF{}", 0);
	cr_assert_not(jsonc_is_plain(j), "a byte order mark");
	jsonc_free(j);
}

Test(jsonc, errors_say_line_column_and_what)
{
	tj_refused("{\n\t\"a\": 1\n\t\"b\": 2\n}", 0, 3, 2, "expected , or }");
	tj_refused("{\"a\": 1, /* open", 0, 1, 10, "closing */");
	tj_refused("{\"a\": \"x", 0, 1, 7, "closing quote");
	tj_refused("{\"a\": 1, \"a\": 2}", 0, 1, 10, "twice");
	tj_refused("{\"é\": \"x\ty\"}", 0, 1, 9, "control character");
	tj_refused("{\"a\": \"\\u0000\"}", 0, 1, 8, "\\u0000");
	tj_refused("{\"a\": \"\\ud800\"}", 0, 1, 8, "surrogate");
	tj_refused("{\"a\": \"\\udc00\"}", 0, 1, 8, "surrogate");
	tj_refused("{\"a\": \"\\x\"}", 0, 1, 8, "escape");
	tj_refused("{\"a\": \"\xC0\xAF\"}", 0, 1, 8, "UTF-8");
	tj_refused("{\"a\": 1e999}", 0, 1, 7, "too big");
	tj_refused("{\"a\": 9223372036854775808}", 0, 1, 7, "64 bits");
	tj_refused("{\"a\": 01}", 0, 1, 8, "expected , or }");
	tj_refused("{\"a\": 1.}", 0, 1, 9, "decimal point");
	tj_refused("{\"a\": tru}", 0, 1, 7, "value");
	tj_refused("{} {}", 0, 1, 4, "more text");
	tj_refused("", 0, 1, 1, "ends");
	tj_refused("{\"a\":", 0, 1, 6, "ends");
	tj_refused("[1, 2", 0, 1, 1, "closing ]");
	tj_refused("{,}", 0, 1, 2, "name in quotes");
	tj_refused("{\"a\" 1}", 0, 1, 6, "expected :");
	static const char nul[] = "{\"a\": 1}\0";
	struct jsonc *j = NULL;
	struct jsonc_error e;
	cr_assert_eq(jsonc_parse(nul, sizeof nul - 1, 0, &j, &e), -EINVAL);
	cr_assert(strstr(e.text, "NUL"), "%s", e.text);
	/* What is wrong quotes nothing of the text (it may be a secret). */
	tj_refused("{\"tok\": s3cr3t}", 0, 1, 9, "value");
	cr_assert_null(strstr(e.text, "s3cr3t"));
}

Test(jsonc, plain_json_reads_as_jansson_reads_it)
{
	static const char *const texts[] = {
		"{\"a\": [1, -0, 0.5e-3, 1E2, true, false, null], \"b\": {}}",
		"[\"\\u00e9\\/\\n\\t\\\"\\\\\", \"\\ud83d\\ude00\", \"é\"]",
		"-9223372036854775808",
		"\"x\"",
		" \r\n\t{\"\": \"\"} ",
		"1e-400",
	};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		struct jsonc *j = tj_parse(texts[i], JSONC_STRICT);
		cr_assert(jsonc_is_plain(j));
		jsonc_free(j);
		j = tj_parse(texts[i], 0);
		cr_assert(jsonc_is_plain(j), "%s", texts[i]);
		json_t *want = tj_json(texts[i]);
		cr_assert(json_equal(jsonc_root(j)->value, want), "%s",
			  texts[i]);
		json_decref(want);
		jsonc_free(j);
	}
}

Test(jsonc, depth_limit)
{
	char in[2 * JSONC_MAX_DEPTH + 3];
	for (int depth = JSONC_MAX_DEPTH; depth <= JSONC_MAX_DEPTH + 1;
	     depth++) {
		memset(in, '[', (size_t)depth);
		memset(in + depth, ']', (size_t)depth);
		in[2 * depth] = '\0';
		struct jsonc *j = NULL;
		struct jsonc_error e;
		int rc = jsonc_parse(in, strlen(in), 0, &j, &e);
		if (depth == JSONC_MAX_DEPTH) {
			cr_assert_eq(rc, 0, "%d: %s", depth, e.text);
		} else {
			cr_assert_eq(rc, -EINVAL);
			cr_assert(strstr(e.text, "deeper"), "%s", e.text);
			cr_assert_eq(e.column, JSONC_MAX_DEPTH + 1);
		}
		jsonc_free(j);
	}
}

Test(jsonc, spans_of_members_and_items)
{
	const char *t = "{\n  \"a\" : [1, \"x\"] , // c\n  \"b\": {\"c\": "
			"true}\n}";
	struct jsonc *j = tj_parse(t, 0);
	const struct jsonc_node *root = jsonc_root(j);
	cr_assert_eq(root->start, 0);
	cr_assert_eq(root->end, strlen(t));
	cr_assert_eq(root->nkids, 2);
	const struct jsonc_node *a = jsonc_member(root, "a");
	cr_assert_eq(a->parent, root);
	cr_assert_eq(strncmp(t + a->name_start, "\"a\" :", 5), 0);
	cr_assert_eq(strncmp(t + a->start, "[1, \"x\"]", a->end - a->start), 0);
	cr_assert_eq(t[a->comma], ',');
	cr_assert_eq(a->comma, a->end + 1);
	cr_assert_eq(a->nkids, 2);
	cr_assert_null(a->kids[1]->name);
	cr_assert_eq(t[a->kids[1]->start], '"');
	cr_assert_eq(a->kids[0]->comma, a->kids[0]->end);
	cr_assert_eq(a->kids[1]->comma, JSONC_NONE);
	const struct jsonc_node *b = jsonc_member(root, "b");
	cr_assert_eq(b->comma, JSONC_NONE);
	cr_assert_str_eq(jsonc_member(b, "c")->name, "c");
	cr_assert_null(jsonc_member(root, "c"));
	cr_assert_null(jsonc_member(a, "a"), "an array has no members");
	jsonc_free(j);
}

/* ---- edits ---- */

enum tj_op { TJ_DROP, TJ_SET, TJ_RENAME, TJ_ADD };

struct tj_edit {
	enum tj_op op;
	const char *path; /* "servers/b": members from the root */
	const char *name; /* TJ_RENAME, TJ_ADD */
	const char *value;
};

static const struct jsonc_node *tj_find(const struct jsonc *j, const char *path)
{
	const struct jsonc_node *n = jsonc_root(j);
	char *p = xstrdup(path), *save = NULL;
	for (char *k = strtok_r(p, "/", &save); k && n;
	     k = strtok_r(NULL, "/", &save))
		n = jsonc_member(n, k);
	free(p);
	cr_assert_not_null(n, "no %s", path);
	return n;
}

/* text after edits; NULL when they were refused. */
static char *tj_edit(const char *text, const struct tj_edit *eds, size_t n)
{
	struct jsonc *j = tj_parse(text, 0);
	struct jsonc_edit *e = jsonc_edit_new(j);
	for (size_t i = 0; i < n; i++) {
		const struct jsonc_node *node = tj_find(j, eds[i].path);
		json_t *v = eds[i].value ? tj_json(eds[i].value) : NULL;
		if (eds[i].op == TJ_DROP)
			jsonc_edit_drop(e, node);
		else if (eds[i].op == TJ_ADD)
			jsonc_edit_add(e, node, eds[i].name, v);
		else
			jsonc_edit_set(
				e, node,
				eds[i].op == TJ_RENAME ? eds[i].name : NULL, v);
		json_decref(v);
	}
	char *out = NULL;
	size_t len = 0;
	int rc = jsonc_edit_finish(e, &out, &len);
	jsonc_free(j);
	if (rc < 0)
		return NULL;
	cr_assert_eq(len, strlen(out));
	/* Whatever the edit, the text reads again. */
	struct jsonc *back = tj_parse(out, 0);
	jsonc_free(back);
	return out;
}

#define TJ_EDIT(text, want, ...)                                               \
	do {                                                                   \
		const struct tj_edit eds_[] = {__VA_ARGS__};                   \
		char *got_ =                                                   \
			tj_edit(text, eds_, sizeof eds_ / sizeof eds_[0]);     \
		cr_assert_not_null(got_);                                      \
		cr_assert_str_eq(got_, want);                                  \
		free(got_);                                                    \
	} while (0)

Test(jsonc, drop_members_on_lines_of_their_own)
{
	const char *t = "{\n"
			"\t// servers\n"
			"\t\"s\": {\n"
			"\t\t\"a\": {\n"
			"\t\t\t\"command\": \"x\"\n"
			"\t\t},\n"
			"\t\t\"b\": 2, // about b\n"
			"\t\t\"c\": 3\n"
			"\t}\n"
			"}\n";
	/* The middle one: its lines go, the comment after it stays. */
	TJ_EDIT(t,
		"{\n\t// servers\n\t\"s\": {\n\t\t\"b\": 2, // about b\n"
		"\t\t\"c\": 3\n\t}\n}\n",
		{TJ_DROP, "s/a", NULL, NULL});
	/* The last: the one now last loses its comma (none was trailing). */
	TJ_EDIT(t,
		"{\n\t// servers\n\t\"s\": {\n\t\t\"a\": {\n\t\t\t\"command\": "
		"\"x\"\n\t\t},\n\t\t\"b\": 2 // about b\n\t}\n}\n",
		{TJ_DROP, "s/c", NULL, NULL});
	/* A comment on the line of one that goes stays on its own. */
	TJ_EDIT(t,
		"{\n\t// servers\n\t\"s\": {\n\t\t\"a\": {\n\t\t\t\"command\": "
		"\"x\"\n\t\t},\n\t\t// about b\n\t\t\"c\": 3\n\t}\n}\n",
		{TJ_DROP, "s/b", NULL, NULL});
	/* All of them. */
	TJ_EDIT(t, "{\n\t// servers\n\t\"s\": {\n\t\t// about b\n\t}\n}\n",
		{TJ_DROP, "s/a", NULL, NULL}, {TJ_DROP, "s/b", NULL, NULL},
		{TJ_DROP, "s/c", NULL, NULL});
}

Test(jsonc, trailing_commas_kept_as_the_object_had_them)
{
	const char *t = "{\n  \"a\": 1,\n  \"b\": [1,],\n}";
	TJ_EDIT(t, "{\n  \"a\": 1,\n}", {TJ_DROP, "b", NULL, NULL});
	TJ_EDIT(t, "{\n  \"b\": [1,],\n}", {TJ_DROP, "a", NULL, NULL});
	TJ_EDIT(t, "{\n  \"a\": 1,\n  \"b\": [1,],\n  \"c\": true,\n}",
		{TJ_ADD, "", "c", "true"});
	TJ_EDIT("{\"a\": 1,}", "{\"a\": 1, \"c\": 2,}", {TJ_ADD, "", "c", "2"});
}

Test(jsonc, drop_members_on_one_line)
{
	const char *t = "{\"a\": 1, \"b\": 2, \"c\": 3}";
	TJ_EDIT(t, "{\"b\": 2, \"c\": 3}", {TJ_DROP, "a", NULL, NULL});
	TJ_EDIT(t, "{\"a\": 1, \"c\": 3}", {TJ_DROP, "b", NULL, NULL});
	TJ_EDIT(t, "{\"a\": 1, \"b\": 2}", {TJ_DROP, "c", NULL, NULL});
	TJ_EDIT(t, "{\"a\": 1}", {TJ_DROP, "b", NULL, NULL},
		{TJ_DROP, "c", NULL, NULL});
	TJ_EDIT(t, "{\"c\": 3}", {TJ_DROP, "a", NULL, NULL},
		{TJ_DROP, "b", NULL, NULL});
	TJ_EDIT("{ \"a\": 1, \"b\": 2 }", "{ \"a\": 1 }",
		{TJ_DROP, "b", NULL, NULL});
	TJ_EDIT("{\"a\":1,\"b\":2}", "{\"b\":2}", {TJ_DROP, "a", NULL, NULL});
	/* A comment between a value and its comma stays. */
	TJ_EDIT("{\"a\": 1 /* one */, \"b\": 2}", "{/* one */ \"b\": 2}",
		{TJ_DROP, "a", NULL, NULL});
}

Test(jsonc, set_renames_and_lays_out_like_the_text)
{
	const char *t = "{\n\t\"s\": {\n\t\t\"a\": {\"command\": \"x\"}, // a\n"
			"\t\t\"b\": [\"-y\",\n\t\t\t\"p\"]\n\t}\n}";
	/* Tabs, and arrays of plain values on one line as the text has
	 * one. */
	TJ_EDIT(t,
		"{\n\t\"s\": {\n\t\t\"r\": {\n\t\t\t\"command\": \"m\",\n"
		"\t\t\t\"args\": [\"relay\", \"--home\", \"/h\"]\n\t\t}, // a\n"
		"\t\t\"b\": [\"-y\",\n\t\t\t\"p\"]\n\t}\n}",
		{TJ_RENAME, "s/a", "r",
		 "{\"command\": \"m\", \"args\": [\"relay\", \"--home\", "
		 "\"/h\"]}"});
	/* The value only; an item too. */
	TJ_EDIT(t,
		"{\n\t\"s\": {\n\t\t\"a\": 7, // a\n\t\t\"b\": [\"-y\",\n"
		"\t\t\t\"p\"]\n\t}\n}",
		{TJ_SET, "s/a", NULL, "7"});
	/* Inside a minified text, minified. */
	TJ_EDIT("{\"s\":{\"a\":1}}", "{\"s\":{\"a\":{\"x\":[1,2]}}}",
		{TJ_SET, "s/a", NULL, "{\"x\": [1, 2]}"});
	/* One that is not at the start of its line stays on it. */
	TJ_EDIT("{\"s\": {\"a\": 1}}", "{\"s\": {\"a\": {\"x\": [1, 2]}}}",
		{TJ_SET, "s/a", NULL, "{\"x\": [1, 2]}"});
	/* Escapes elsewhere are the text's own. */
	TJ_EDIT("{\"d\": \"\\u00e9\\/\", \"a\": 1}",
		"{\"d\": \"\\u00e9\\/\", \"a\": \"é/\"}",
		{TJ_SET, "a", NULL, "\"é/\""});
}

Test(jsonc, add_where_the_members_are)
{
	/* After the last member, past its comment; spaces as the text. */
	TJ_EDIT("{\n    \"s\": {\n        \"a\": 1 // one\n    }\n}\n",
		"{\n    \"s\": {\n        \"a\": 1, // one\n        \"n\": {\n"
		"            \"k\": [\n                1\n            ]\n"
		"        }\n    }\n}\n",
		{TJ_ADD, "s", "n", "{\"k\": [1]}"});
	/* Into an empty object, and into one whose members all went. */
	TJ_EDIT("{\n  \"s\": {}\n}", "{\n  \"s\": {\n    \"n\": 1\n  }\n}",
		{TJ_ADD, "s", "n", "1"});
	TJ_EDIT("{\n  \"s\": {\n    \"a\": 1\n  }\n}",
		"{\n  \"s\": {\n    \"n\": 1,\n    \"m\": 2\n  }\n}",
		{TJ_DROP, "s/a", NULL, NULL}, {TJ_ADD, "s", "n", "1"},
		{TJ_ADD, "s", "m", "2"});
	/* A key the root lacks: last in it. */
	TJ_EDIT("// c\n{\n\t\"inputs\": []\n}\n",
		"// c\n{\n\t\"inputs\": [],\n\t\"servers\": {\n\t\t\"n\": 1\n"
		"\t}\n}\n",
		{TJ_ADD, "", "servers", "{\"n\": 1}"});
	TJ_EDIT("{}", "{\n  \"n\": 1\n}", {TJ_ADD, "", "n", "1"});
	/* One line stays one line. */
	TJ_EDIT("{\"s\": {\"a\": 1}}", "{\"s\": {\"a\": 1, \"n\": [1, 2]}}",
		{TJ_ADD, "s", "n", "[1, 2]"});
	TJ_EDIT("{\"s\":{\"a\":1}}", "{\"s\":{\"a\":1,\"n\":{\"x\":2}}}",
		{TJ_ADD, "s", "n", "{\"x\": 2}"});
	/* Windows line breaks. */
	TJ_EDIT("{\r\n  \"a\": 1\r\n}\r\n",
		"{\r\n  \"a\": 1,\r\n  \"n\": {\r\n    \"x\": 2\r\n  "
		"}\r\n}\r\n",
		{TJ_ADD, "", "n", "{\"x\": 2}"});
	TJ_EDIT("{\r\n  \"a\": 1,\r\n  \"b\": 2\r\n}", "{\r\n  \"b\": 2\r\n}",
		{TJ_DROP, "a", NULL, NULL});
}

Test(jsonc, overlapping_edits_are_refused)
{
	const struct tj_edit eds[] = {
		{TJ_DROP, "s", NULL, NULL},
		{TJ_SET, "s/a", NULL, "1"},
	};
	cr_assert_null(tj_edit("{\"s\": {\"a\": 2}}", eds, 2));
}

Test(jsonc, layout_of_a_new_text)
{
	json_t *v = tj_json("{\"a\": [1, \"x\"], \"b\": {\"c\": []}}");
	char *t = jsonc_layout(v, "{\n\t\"x\": [1, 2]\n}", "");
	cr_assert_str_eq(t, "{\n\t\"a\": [1, \"x\"],\n\t\"b\": {\n\t\t\"c\": "
			    "[]\n\t}\n}");
	free(t);
	t = jsonc_layout(v, NULL, "  ");
	cr_assert_str_eq(t, "{\n    \"a\": [\n      1,\n      \"x\"\n    ],\n"
			    "    \"b\": {\n      \"c\": []\n    }\n  }");
	free(t);
	cr_assert_str_eq(jsonc_eol("{\r\n}"), "\r\n");
	cr_assert_str_eq(jsonc_eol("{\n}"), "\n");
	cr_assert_str_eq(jsonc_eol(NULL), "\n");
	json_decref(v);
}
