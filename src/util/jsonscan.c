/* Validating, allocation-free scan of JSON text for top-level members. */
#include "util/jsonscan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct jscan {
	const char *s;
	size_t len;
	size_t i;
};

static void jscan_ws(struct jscan *j)
{
	while (j->i < j->len && (j->s[j->i] == ' ' || j->s[j->i] == '\t' ||
				 j->s[j->i] == '\n' || j->s[j->i] == '\r'))
		j->i++;
}

static bool jscan_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

/* A string at j->i; *plain says whether it had no escapes. UTF-8 validity
 * is the framer's; control characters are refused here. */
static int jscan_string(struct jscan *j, bool *plain)
{
	if (j->i >= j->len || j->s[j->i] != '"')
		return -1;
	j->i++;
	*plain = true;
	while (j->i < j->len) {
		unsigned char c = (unsigned char)j->s[j->i];
		if (c == '"') {
			j->i++;
			return 0;
		}
		if (c < 0x20)
			return -1;
		if (c == '\\') {
			*plain = false;
			if (j->i + 1 >= j->len)
				return -1;
			char e = j->s[j->i + 1];
			if (e == 'u') {
				if (j->i + 5 >= j->len)
					return -1;
				for (int k = 2; k < 6; k++)
					if (!jscan_hex(j->s[j->i + k]))
						return -1;
				j->i += 6;
				continue;
			}
			if (strchr("\"\\/bfnrt", e) == NULL || e == '\0')
				return -1;
			j->i += 2;
			continue;
		}
		j->i++;
	}
	return -1;
}

static int jscan_number(struct jscan *j)
{
	size_t start = j->i;
	if (j->i < j->len && j->s[j->i] == '-')
		j->i++;
	if (j->i >= j->len)
		return -1;
	if (j->s[j->i] == '0') {
		j->i++;
	} else if (j->s[j->i] >= '1' && j->s[j->i] <= '9') {
		while (j->i < j->len && j->s[j->i] >= '0' && j->s[j->i] <= '9')
			j->i++;
	} else {
		return -1;
	}
	if (j->i < j->len && j->s[j->i] == '.') {
		j->i++;
		size_t d = j->i;
		while (j->i < j->len && j->s[j->i] >= '0' && j->s[j->i] <= '9')
			j->i++;
		if (j->i == d)
			return -1;
	}
	if (j->i < j->len && (j->s[j->i] == 'e' || j->s[j->i] == 'E')) {
		j->i++;
		if (j->i < j->len && (j->s[j->i] == '+' || j->s[j->i] == '-'))
			j->i++;
		size_t d = j->i;
		while (j->i < j->len && j->s[j->i] >= '0' && j->s[j->i] <= '9')
			j->i++;
		if (j->i == d)
			return -1;
	}
	return j->i > start ? 0 : -1;
}

static int jscan_value(struct jscan *j, int depth);

static int jscan_literal(struct jscan *j, const char *lit)
{
	size_t n = strlen(lit);
	if (j->len - j->i < n || memcmp(j->s + j->i, lit, n) != 0)
		return -1;
	j->i += n;
	return 0;
}

static int jscan_array(struct jscan *j, int depth)
{
	j->i++; /* '[' */
	jscan_ws(j);
	if (j->i < j->len && j->s[j->i] == ']') {
		j->i++;
		return 0;
	}
	for (;;) {
		if (jscan_value(j, depth + 1) < 0)
			return -1;
		jscan_ws(j);
		if (j->i >= j->len)
			return -1;
		if (j->s[j->i] == ']') {
			j->i++;
			return 0;
		}
		if (j->s[j->i] != ',')
			return -1;
		j->i++;
	}
}

/* An object; when keys is set, the spans of its members are reported. */
static int jscan_object(struct jscan *j, int depth, const char *const *keys,
			size_t n, struct jsonscan_span *spans)
{
	j->i++; /* '{' */
	jscan_ws(j);
	if (j->i < j->len && j->s[j->i] == '}') {
		j->i++;
		return 0;
	}
	for (;;) {
		jscan_ws(j);
		size_t kstart = j->i + 1;
		bool plain;
		if (jscan_string(j, &plain) < 0)
			return -1;
		size_t klen = j->i - 1 - kstart;
		jscan_ws(j);
		if (j->i >= j->len || j->s[j->i] != ':')
			return -1;
		j->i++;
		jscan_ws(j);
		size_t vstart = j->i;
		if (jscan_value(j, depth + 1) < 0)
			return -1;
		for (size_t k = 0; keys && plain && k < n; k++) {
			if (strlen(keys[k]) == klen &&
			    memcmp(keys[k], j->s + kstart, klen) == 0) {
				spans[k].off = vstart;
				spans[k].len = j->i - vstart;
			}
		}
		jscan_ws(j);
		if (j->i >= j->len)
			return -1;
		if (j->s[j->i] == '}') {
			j->i++;
			return 0;
		}
		if (j->s[j->i] != ',')
			return -1;
		j->i++;
	}
}

static int jscan_value(struct jscan *j, int depth)
{
	if (depth > JSONSCAN_MAX_DEPTH)
		return -1;
	jscan_ws(j);
	if (j->i >= j->len)
		return -1;
	bool plain;
	switch (j->s[j->i]) {
	case '{':
		return jscan_object(j, depth, NULL, 0, NULL);
	case '[':
		return jscan_array(j, depth);
	case '"':
		return jscan_string(j, &plain);
	case 't':
		return jscan_literal(j, "true");
	case 'f':
		return jscan_literal(j, "false");
	case 'n':
		return jscan_literal(j, "null");
	default:
		return jscan_number(j);
	}
}

int jsonscan_members(const char *text, size_t len, const char *const *keys,
		     size_t n, struct jsonscan_span *spans)
{
	struct jscan j = {text, len, 0};
	for (size_t k = 0; k < n; k++)
		spans[k].off = spans[k].len = 0;
	jscan_ws(&j);
	if (j.i >= j.len || j.s[j.i] != '{')
		return -1;
	if (jscan_object(&j, 1, keys, n, spans) < 0)
		return -1;
	jscan_ws(&j);
	return j.i == j.len ? 0 : -1;
}

bool jsonscan_int(const char *text, const struct jsonscan_span *span,
		  long long *v)
{
	if (span->len == 0 || span->len > 20)
		return false;
	char buf[24];
	memcpy(buf, text + span->off, span->len);
	buf[span->len] = '\0';
	for (size_t i = 0; i < span->len; i++)
		if (!(buf[i] == '-' && i == 0) &&
		    (buf[i] < '0' || buf[i] > '9'))
			return false;
	char *end;
	errno = 0;
	*v = strtoll(buf, &end, 10);
	return errno == 0 && *end == '\0';
}
