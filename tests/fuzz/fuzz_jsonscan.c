/*
 * libFuzzer harness for the allocation-free JSON scan (src/util/jsonscan.c)
 * the fast path trusts in place of jansson. Beyond the sanitizers: spans
 * lie inside the text, and the scan agrees with jansson, the parser of the
 * slow path.
 *
 * jsonscan_members (server lines, after the framer: valid UTF-8, no NUL)
 * checks syntax only, so it differs from jansson in known classes (\u0000,
 * lone surrogates, numbers jansson cannot hold; names with escapes never
 * match). Each class has a probe: one the scan refuses is enforced, one it
 * accepts is tolerated and named at start-up. jsonscan_members_strict
 * (a client's text forwarded unparsed) is held to jansson on any bytes.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/framer.h"
#include "util/jsonscan.h"

static const char *const fj_keys[] = {"jsonrpc", "id",	 "method",
				      "params",	 "name", "_meta"};
#define FJ_NKEYS (sizeof fj_keys / sizeof *fj_keys)

enum fj_class {
	FJ_NUL_ESCAPE,	   /* "\u0000" */
	FJ_LONE_SURROGATE, /* "\ud800" */
	FJ_BIG_INT,	   /* 99999999999999999999 */
	FJ_BIG_REAL,	   /* 1e999 */
	FJ_ESCAPED_NAME,   /* "n\u0061me": jansson decodes, scan skips */
	FJ_DUP_NAME,	   /* "a":1,"a":2 */
	FJ_NCLASSES,
};

static const struct {
	const char *name;
	const char *probe;
} fj_classes[FJ_NCLASSES] = {
	[FJ_NUL_ESCAPE] = {"\\u0000", "{\"a\":\"\\u0000\"}"},
	[FJ_LONE_SURROGATE] = {"lone surrogate", "{\"a\":\"\\ud800\"}"},
	[FJ_BIG_INT] = {"integer over 64 bits", "{\"a\":99999999999999999999}"},
	[FJ_BIG_REAL] = {"real overflow", "{\"a\":1e999}"},
	[FJ_ESCAPED_NAME] = {"escaped member name",
			     "{\"n\\u0061me\":1,\"params\":{\"\\u0061\":1}}"},
	[FJ_DUP_NAME] = {"duplicate member name",
			 "{\"name\":1,\"name\":2,\"p\":{\"a\":1,\"a\":2}}"},
};

static bool fj_scan_accepts[FJ_NCLASSES];

static int fj_scan(const char *s, size_t len, struct jsonscan_span *sp)
{
	return jsonscan_members(s, len, fj_keys, FJ_NKEYS, sp);
}

static void fj_probe(void)
{
	struct jsonscan_span sp[FJ_NKEYS];
	fprintf(stderr, "fuzz_jsonscan: the plain scan (server lines) "
			"differs from jansson on:");
	int n = 0;
	for (int c = 0; c < FJ_NCLASSES; c++) {
		const char *t = fj_classes[c].probe;
		fj_scan_accepts[c] = fj_scan(t, strlen(t), sp) == 0;
		if (fj_scan_accepts[c])
			fprintf(stderr, "%s %s", n++ ? "," : "",
				fj_classes[c].name);
	}
	fprintf(stderr, "%s\n", n ? "" : " none");
}

static void fj_fail(const char *what, const char *s, size_t len)
{
	fprintf(stderr, "fuzz_jsonscan: FAIL: %s\ntext: %.*s\n", what,
		(int)(len > 2000 ? 2000 : len), s);
	abort();
}

/* s[*i] is the '"' that opens a string: moves *i to the one that closes
 * it. Returns whether the string has an escape; *name says whether a ':'
 * follows it (it is a member name). */
static bool fj_lex_string(const char *s, size_t len, size_t *i, bool *name)
{
	bool esc = false;
	for ((*i)++; *i < len && s[*i] != '"'; (*i)++) {
		if (s[*i] == '\\') {
			esc = true;
			(*i)++;
		}
	}
	size_t j = *i + 1;
	while (j < len && strchr(" \t\r\n", s[j]))
		j++;
	*name = j < len && s[j] == ':';
	return esc;
}

/* Whether the text has a member name written with an escape, at any
 * depth. Only called on text jansson accepted, so a plain lexer will do:
 * a string followed by ':' is a name. */
static bool fj_has_escaped_name(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '"')
			continue;
		bool name;
		if (fj_lex_string(s, len, &i, &name) && name)
			return true;
	}
	return false;
}

/* Depth as jsonscan counts it: the top object is 1 and every value, a
 * scalar too, one more than its container. */
static int fj_depth(const json_t *v)
{
	int d = 0;
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, x)
		{
			int e = fj_depth(x);
			d = e > d ? e : d;
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
		{
			int e = fj_depth(x);
			d = e > d ? e : d;
		}
	}
	return d + 1;
}

/* The class jansson's refusal belongs to, from its error code or, where
 * the code is too coarse, its message (jansson 2.14 wording); -1 for any
 * other reason. */
static int fj_refusal_class(const json_error_t *e)
{
	const char *why = e->text;
	enum json_error_code code = json_error_code(e);
	if (code == json_error_null_character ||
	    code == json_error_null_byte_in_key)
		return FJ_NUL_ESCAPE;
	if (code == json_error_duplicate_key)
		return FJ_DUP_NAME;
	if (strstr(why, "invalid Unicode") || strstr(why, "surrogate"))
		return FJ_LONE_SURROGATE;
	if (strstr(why, "too big integer") ||
	    strstr(why, "too big negative integer"))
		return FJ_BIG_INT;
	if (strstr(why, "real number overflow"))
		return FJ_BIG_REAL;
	return -1;
}

#ifdef JSONSCAN_MAX_UNIQUE
/* Whether a member name of the top object has escapes or comes twice (the
 * text's names outnumber jansson's members). Only for text jansson
 * accepted, so a plain lexer will do. */
static bool fj_top_names_ambiguous(const char *s, size_t len, size_t members)
{
	int depth = 0;
	size_t names = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '{' || s[i] == '[') {
			depth++;
			continue;
		}
		if (s[i] == '}' || s[i] == ']') {
			depth--;
			continue;
		}
		if (s[i] != '"')
			continue;
		bool name;
		bool esc = fj_lex_string(s, len, &i, &name);
		if (depth == 1 && name) {
			if (esc)
				return true;
			names++;
		}
	}
	return names != members;
}

static bool fj_has_huge_real(const json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_real(v))
		return json_real_value(v) >= 1e308 ||
		       json_real_value(v) <= -1e308;
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, x)
		{
			if (fj_has_huge_real(x))
				return true;
		}
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, x)
		{
			if (fj_has_huge_real(x))
				return true;
		}
	}
	return false;
}

/* One pass for params' members too agrees with the two passes it
 * replaces: the top-level scan, then params' object scanned alone (the
 * depth one less, so an object at the limit may be refused). */
static void fj_check_nested(const char *s, size_t len, int rs,
			    const struct jsonscan_span *st)
{
	static const char *const inner[] = {"name", "_meta"};
	struct jsonscan_span sp[FJ_NKEYS], in[2], alone[2];
	const struct jsonscan_level lv[] = {{fj_keys, FJ_NKEYS, sp, 3},
					    {inner, 2, in, 0}};
	int rn = jsonscan_levels_strict(s, len, lv, 2);
	if (rn == 0 && (rs != 0 || memcmp(sp, st, sizeof sp) != 0))
		fj_fail("nested scan read the top level differently", s, len);
	if (rn != 0 || st[3].len == 0 || s[st[3].off] != '{')
		return;
	if (jsonscan_members_strict(s + st[3].off, st[3].len, inner, 2,
				    alone) != 0)
		fj_fail("nested scan accepted params the strict scan refuses",
			s, len);
	for (size_t k = 0; k < 2; k++)
		if (in[k].len != alone[k].len ||
		    (in[k].len && in[k].off != alone[k].off + st[3].off))
			fj_fail("nested span and params' own scan differ", s,
				len);
}

/* The strict scan guards text a client sends that is forwarded unparsed:
 * on any bytes, what it accepts jansson parses with the same members, and
 * it refuses an object jansson parses only for the reasons its header
 * gives (names with escapes or twice at the top, more than
 * JSONSCAN_MAX_UNIQUE members, depth, reals from 1e308 up). */
static void fj_check_strict(const char *s, size_t len, int rc,
			    const struct jsonscan_span *sp)
{
	struct jsonscan_span st[FJ_NKEYS];
	int rs = jsonscan_members_strict(s, len, fj_keys, FJ_NKEYS, st);
	if (rs == 0 && (rc != 0 || memcmp(st, sp, sizeof st) != 0))
		fj_fail("strict and plain scans read the text differently", s,
			len);
	json_t *root = json_loadb(s, len, 0, NULL);
	bool jok = root && json_is_object(root);
	if (rs == 0 && !jok)
		fj_fail("strict scan accepted what jansson refuses", s, len);
	for (size_t k = 0; rs == 0 && k < FJ_NKEYS; k++) {
		json_t *jv = json_object_get(root, fj_keys[k]);
		json_t *sv = st[k].len ? json_loadb(s + st[k].off, st[k].len,
						    JSON_DECODE_ANY, NULL)
				       : NULL;
		if ((jv || sv) && !(jv && sv && json_equal(jv, sv)))
			fj_fail("strict span and jansson's member differ", s,
				len);
		json_decref(sv);
	}
	/* jansson skips a raw NUL between tokens ({"a":1\0} parses). */
	if (rs != 0 && jok && !memchr(s, 0, len) &&
	    fj_depth(root) <= JSONSCAN_MAX_DEPTH &&
	    json_object_size(root) <= JSONSCAN_MAX_UNIQUE &&
	    !fj_top_names_ambiguous(s, len, json_object_size(root)) &&
	    !fj_has_huge_real(root))
		fj_fail("strict scan refused an object jansson accepts", s,
			len);
	json_decref(root);
	fj_check_nested(s, len, rs, st);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool probed;
	if (!probed) {
		fj_probe();
		probed = true;
	}
	const char *s = (const char *)data;
	struct jsonscan_span sp[FJ_NKEYS];
	int rc = fj_scan(s, size, sp);
	if (rc == 0) {
		for (size_t k = 0; k < FJ_NKEYS; k++) {
			if (sp[k].len == 0)
				continue;
			if (sp[k].off > size || sp[k].len > size - sp[k].off)
				fj_fail("span outside the text", s, size);
			long long v;
			(void)jsonscan_int(s, &sp[k], &v);
		}
	}
#ifdef JSONSCAN_MAX_UNIQUE
	fj_check_strict(s, size, rc, sp);
#endif
	/* The scan's contract covers what the framer passes on. */
	if (framer_utf8_prefix(s, size) != size || memchr(s, 0, size))
		return 0;

	json_error_t jerr;
	/* Duplicates are refused by jansson only on request: ask, so that
	 * class is seen like the others. */
	size_t flags =
		JSON_DECODE_ANY |
		(fj_scan_accepts[FJ_DUP_NAME] ? 0 : JSON_REJECT_DUPLICATES);
	json_t *root = json_loadb(s, size, flags, &jerr);
	bool jok = root && json_is_object(root);
	bool escaped = jok && fj_has_escaped_name(s, size);

	if (rc == 0 && !jok) {
		int c = root ? -1 : fj_refusal_class(&jerr);
		if (c < 0 || !fj_scan_accepts[c]) {
			fprintf(stderr, "jansson: %s\n",
				root ? "not an object" : jerr.text);
			fj_fail("jsonscan accepted what jansson refuses", s,
				size);
		}
	}
	if (rc != 0 && jok && fj_depth(root) <= JSONSCAN_MAX_DEPTH &&
	    !(escaped && !fj_scan_accepts[FJ_ESCAPED_NAME]))
		fj_fail("jsonscan refused an object jansson accepts", s, size);
	if (rc == 0 && jok) {
		for (size_t k = 0; k < FJ_NKEYS; k++) {
			json_t *jv = json_object_get(root, fj_keys[k]);
			if (sp[k].len == 0) {
				if (jv && !escaped)
					fj_fail("member jansson has is missing",
						s, size);
				continue;
			}
			json_t *sv = json_loadb(s + sp[k].off, sp[k].len,
						JSON_DECODE_ANY, NULL);
			/* An escaped name may stand for the same member and
			 * win as the later one in jansson's reading. */
			bool same = sv && jv && json_equal(sv, jv);
			if (!same && !(escaped && jv))
				fj_fail("a span holds another value than "
					"jansson's member",
					s, size);
			/* Ids are read with jsonscan_int: an integer to
			 * jansson is one to it, with the same value. */
			long long iv;
			bool is_int = jsonscan_int(s, &sp[k], &iv);
			if (sv && is_int != json_is_integer(sv))
				fj_fail("jsonscan_int and jansson differ on "
					"what is an integer",
					s, size);
			if (is_int && sv && iv != json_integer_value(sv))
				fj_fail("jsonscan_int read another value", s,
					size);
			json_decref(sv);
		}
	}
	json_decref(root);
	return 0;
}
