/* Validating, allocation-free scan of JSON text for top-level members. */
#include "util/jsonscan.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct jscan {
	const char *s;
	size_t len;
	size_t i;
	bool strict; /* values as jansson takes them (see the header) */
};

/* The members an object's scan reports: their names, and where their
 * spans go; and, for one of them (nest), the members of its value when
 * that is an object. */
struct jscan_keys {
	const char *const *keys;
	size_t n;
	struct jsonscan_span *spans;
	size_t nest; /* index in keys; n: none */
	const struct jscan_keys *inner;
};

static void jscan_keys_init(struct jscan_keys *k, const char *const *keys,
			    size_t n, struct jsonscan_span *spans)
{
	k->keys = keys;
	k->n = n;
	k->spans = spans;
	k->nest = n;
	k->inner = NULL;
	for (size_t i = 0; i < n; i++)
		spans[i].off = spans[i].len = 0;
}

/* Which of ks's names the member name s[0..n) is; ks->n when none. Byte
 * by byte rather than by measured lengths and memcmp: most names differ
 * from a key in their first byte, and the keys need no strlen per scan.
 * A valid name holds no NUL, so a key that ends first never matches. */
static size_t jscan_key_find(const struct jscan_keys *ks, const char *s,
			     size_t n)
{
	for (size_t k = 0; k < ks->n; k++) {
		const char *key = ks->keys[k];
		size_t i = 0;
		while (i < n && key[i] == s[i])
			i++;
		if (i == n && key[n] == '\0')
			return k;
	}
	return ks->n;
}

/* JSON's whitespace, as a table: most calls of jscan_ws meet none, and
 * one test tells so. */
static const bool jscan_space[256] = {
	[' '] = true, ['\t'] = true, ['\n'] = true, ['\r'] = true};

static void jscan_ws(struct jscan *j)
{
	while (j->i < j->len && jscan_space[(unsigned char)j->s[j->i]])
		j->i++;
}

static bool jscan_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

/* The value of the four hex digits at p. */
static unsigned jscan_hex4(const char *p)
{
	unsigned v = 0;
	for (int k = 0; k < 4; k++) {
		char c = p[k];
		v = v * 16 + (unsigned)(c <= '9'   ? c - '0'
					: c <= 'F' ? c - 'A' + 10
						   : c - 'a' + 10);
	}
	return v;
}

/* One UTF-8 sequence of 2 to 4 bytes at j->i, as jansson accepts it: no
 * overlong forms, no surrogates, nothing past U+10FFFF. */
static int jscan_utf8(struct jscan *j)
{
	const unsigned char *p = (const unsigned char *)j->s + j->i;
	unsigned char c = p[0];
	size_t n;
	unsigned v;
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		v = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		v = c & 0x07;
	} else {
		return -1;
	}
	if (j->len - j->i < n)
		return -1;
	for (size_t k = 1; k < n; k++) {
		if ((p[k] & 0xC0) != 0x80)
			return -1;
		v = (v << 6) | (p[k] & 0x3F);
	}
	if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10FFFF ||
	    (v >= 0xD800 && v <= 0xDFFF))
		return -1;
	j->i += n;
	return 0;
}

/* A \u escape at j->i (the backslash). Strict: with its low surrogate
 * when it is a high one, and \u0000 and unpaired surrogates refused, as
 * jansson does by default. */
static int jscan_uescape(struct jscan *j)
{
	if (j->len - j->i < 6)
		return -1;
	for (int k = 2; k < 6; k++)
		if (!jscan_hex(j->s[j->i + k]))
			return -1;
	unsigned v = jscan_hex4(j->s + j->i + 2);
	j->i += 6;
	if (!j->strict)
		return 0;
	if (v == 0 || (v >= 0xDC00 && v <= 0xDFFF))
		return -1;
	if (v < 0xD800 || v > 0xDBFF)
		return 0;
	if (j->len - j->i < 6 || j->s[j->i] != '\\' || j->s[j->i + 1] != 'u')
		return -1;
	for (int k = 2; k < 6; k++)
		if (!jscan_hex(j->s[j->i + k]))
			return -1;
	unsigned lo = jscan_hex4(j->s + j->i + 2);
	if (lo < 0xDC00 || lo > 0xDFFF)
		return -1;
	j->i += 6;
	return 0;
}

/* The bytes that go on a string's run, as a table, so that the run
 * costs one test a byte (the _meta keys of every 2026-07-28 request are
 * long): not control bytes, not '"' (it ends the string) or '\\' (an
 * escape), not bytes from 0x80 up (UTF-8, checked apart). */
static const bool jscan_ordinary[256] = {
	[0x20 ... 0x21] = true,
	[0x23 ... 0x5b] = true,
	[0x5d ... 0x7f] = true,
};

/* The rest of a string from j->i, the first byte of it that is not
 * ordinary: escapes, UTF-8, the end. Apart from jscan_string so that the
 * common string, ordinary bytes only, pays for none of this. */
static int jscan_string_rest(struct jscan *j, bool *plain)
{
	while (j->i < j->len) {
		const unsigned char *p = (const unsigned char *)j->s;
		size_t i = j->i, len = j->len;
		while (i < len && jscan_ordinary[p[i]])
			i++;
		j->i = i;
		if (i >= len)
			break;
		unsigned char c = p[i];
		if (c == '"') {
			j->i++;
			return 0;
		}
		if (c < 0x20)
			return -1;
		if (c >= 0x80 && j->strict) {
			if (jscan_utf8(j) < 0)
				return -1;
			continue;
		}
		if (c == '\\') {
			*plain = false;
			if (j->i + 1 >= j->len)
				return -1;
			char e = j->s[j->i + 1];
			if (e == 'u') {
				if (jscan_uescape(j) < 0)
					return -1;
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

/* A string at j->i; *plain says whether it had no escapes. Control
 * characters are refused; strict, also what else jansson refuses: invalid
 * UTF-8, \u0000 and unpaired surrogates. Inline: now small, it is met
 * twice a member, and a call of it cost more than a short string's scan. */
static inline int jscan_string(struct jscan *j, bool *plain)
{
	if (j->i >= j->len || j->s[j->i] != '"')
		return -1;
	*plain = true;
	/* The run of ordinary bytes, in one tight loop: most strings are
	 * nothing else. */
	const unsigned char *p = (const unsigned char *)j->s;
	size_t i = j->i + 1, len = j->len;
	while (i < len && jscan_ordinary[p[i]])
		i++;
	if (i < len && p[i] == '"') {
		j->i = i + 1;
		return 0;
	}
	j->i = i;
	return jscan_string_rest(j, plain);
}

/* Digits from j->i on; how many. */
static size_t jscan_digits(struct jscan *j)
{
	size_t d = j->i;
	while (j->i < j->len && j->s[j->i] >= '0' && j->s[j->i] <= '9')
		j->i++;
	return j->i - d;
}

/* Whether an integer of these digits (no sign, no leading zero) fits an
 * int64, as jansson's strtoll must. */
static bool jscan_int_fits(const char *d, size_t n, bool neg)
{
	if (n != 19)
		return n < 19;
	return memcmp(d, neg ? "9223372036854775808" : "9223372036854775807",
		      19) <= 0;
}

/* A number. Strict, also refused where jansson refuses it: an integer
 * beyond int64, a real that overflows a double. Reals of 1e308 and up are
 * refused too (a few of those are finite; the caller's full parse takes
 * them). */
static int jscan_number(struct jscan *j)
{
	bool neg = false;
	if (j->i < j->len && j->s[j->i] == '-') {
		neg = true;
		j->i++;
	}
	if (j->i >= j->len)
		return -1;
	size_t int_at = j->i, nint;
	if (j->s[j->i] == '0') {
		j->i++;
		nint = 1;
	} else if (j->s[j->i] >= '1' && j->s[j->i] <= '9') {
		nint = jscan_digits(j);
	} else {
		return -1;
	}
	size_t frac_at = 0, nfrac = 0;
	if (j->i < j->len && j->s[j->i] == '.') {
		j->i++;
		frac_at = j->i;
		if ((nfrac = jscan_digits(j)) == 0)
			return -1;
	}
	bool has_exp = false, exp_neg = false;
	long long exp = 0;
	if (j->i < j->len && (j->s[j->i] == 'e' || j->s[j->i] == 'E')) {
		has_exp = true;
		j->i++;
		if (j->i < j->len && (j->s[j->i] == '+' || j->s[j->i] == '-'))
			exp_neg = j->s[j->i++] == '-';
		size_t d = j->i;
		if (jscan_digits(j) == 0)
			return -1;
		for (size_t k = d; k < j->i && exp < 1000000000000000LL; k++)
			exp = exp * 10 + (j->s[k] - '0');
		if (exp_neg)
			exp = -exp;
	}
	if (!j->strict)
		return 0;
	if (frac_at == 0 && !has_exp)
		return jscan_int_fits(j->s + int_at, nint, neg) ? 0 : -1;
	/* The power of ten of the first significant digit. */
	long long mag;
	if (j->s[int_at] != '0') {
		mag = (long long)nint - 1;
	} else {
		size_t z = 0;
		while (z < nfrac && j->s[frac_at + z] == '0')
			z++;
		if (z == nfrac)
			return 0; /* zero, whatever its exponent */
		mag = -(long long)z - 1;
	}
	return mag + exp < 308 ? 0 : -1;
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
		jscan_ws(j);
	}
}

/* An object; when ks is set, the spans of its members are reported.
 * unique: refused when a member name has escapes or comes twice, so that
 * every reader finds the same members. */
static int jscan_object(struct jscan *j, int depth, const struct jscan_keys *ks,
			bool unique)
{
	struct jsonscan_span names[JSONSCAN_MAX_UNIQUE];
	size_t nnames = 0;
	j->i++; /* '{' */
	jscan_ws(j);
	if (j->i < j->len && j->s[j->i] == '}') {
		j->i++;
		return 0;
	}
	for (;;) {
		size_t kstart = j->i + 1;
		bool plain;
		if (jscan_string(j, &plain) < 0)
			return -1;
		size_t klen = j->i - 1 - kstart;
		if (unique) {
			if (!plain || nnames == JSONSCAN_MAX_UNIQUE)
				return -1;
			for (size_t k = 0; k < nnames; k++)
				if (names[k].len == klen &&
				    memcmp(j->s + names[k].off, j->s + kstart,
					   klen) == 0)
					return -1;
			names[nnames].off = kstart;
			names[nnames++].len = klen;
		}
		jscan_ws(j);
		if (j->i >= j->len || j->s[j->i] != ':')
			return -1;
		j->i++;
		jscan_ws(j);
		size_t vstart = j->i;
		size_t hit = ks ? ks->n : 0;
		if (ks && plain)
			hit = jscan_key_find(ks, j->s + kstart, klen);
		int rc;
		if (ks && hit == ks->nest && hit < ks->n) {
			/* The nested object's members, as of its last
			 * value (a name met twice reports its last). */
			const struct jscan_keys *in = ks->inner;
			for (const struct jscan_keys *d = in; d; d = d->inner)
				for (size_t k = 0; k < d->n; k++)
					d->spans[k].off = d->spans[k].len = 0;
			rc = j->i < j->len && j->s[j->i] == '{' &&
					     depth + 1 <= JSONSCAN_MAX_DEPTH
				     ? jscan_object(j, depth + 1, in, unique)
				     : jscan_value(j, depth + 1);
		} else {
			rc = jscan_value(j, depth + 1);
		}
		if (rc < 0)
			return -1;
		if (ks && hit < ks->n) {
			ks->spans[hit].off = vstart;
			ks->spans[hit].len = j->i - vstart;
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
		jscan_ws(j);
	}
}

/* A value at j->i: its callers have skipped the whitespace before it. */
static int jscan_value(struct jscan *j, int depth)
{
	if (depth > JSONSCAN_MAX_DEPTH)
		return -1;
	if (j->i >= j->len)
		return -1;
	bool plain;
	switch (j->s[j->i]) {
	case '{':
		return jscan_object(j, depth, NULL, false);
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

static int jsonscan_top(const char *text, size_t len,
			const struct jscan_keys *ks, bool strict)
{
	struct jscan j = {text, len, 0, strict};
	jscan_ws(&j);
	if (j.i >= j.len || j.s[j.i] != '{')
		return -1;
	if (jscan_object(&j, 1, ks, strict) < 0)
		return -1;
	jscan_ws(&j);
	return j.i == j.len ? 0 : -1;
}

int jsonscan_members(const char *text, size_t len, const char *const *keys,
		     size_t n, struct jsonscan_span *spans)
{
	if (n > JSONSCAN_MAX_KEYS)
		return -1;
	struct jscan_keys ks;
	jscan_keys_init(&ks, keys, n, spans);
	return jsonscan_top(text, len, &ks, false);
}

int jsonscan_members_strict(const char *text, size_t len,
			    const char *const *keys, size_t n,
			    struct jsonscan_span *spans)
{
	if (n > JSONSCAN_MAX_KEYS)
		return -1;
	struct jscan_keys ks;
	jscan_keys_init(&ks, keys, n, spans);
	return jsonscan_top(text, len, &ks, true);
}

static int jsonscan_levels_top(const char *text, size_t len,
			       const struct jsonscan_level *levels,
			       size_t nlevels, bool strict)
{
	struct jscan_keys ks[JSONSCAN_MAX_LEVELS];
	if (nlevels == 0 || nlevels > JSONSCAN_MAX_LEVELS)
		return -1;
	for (size_t l = 0; l < nlevels; l++) {
		const struct jsonscan_level *lv = &levels[l];
		if (lv->n > JSONSCAN_MAX_KEYS ||
		    (l + 1 < nlevels && lv->nest >= lv->n))
			return -1;
		jscan_keys_init(&ks[l], lv->keys, lv->n, lv->spans);
		if (l + 1 < nlevels) {
			ks[l].nest = lv->nest;
			ks[l].inner = &ks[l + 1];
		}
	}
	return jsonscan_top(text, len, &ks[0], strict);
}

int jsonscan_levels(const char *text, size_t len,
		    const struct jsonscan_level *levels, size_t nlevels)
{
	return jsonscan_levels_top(text, len, levels, nlevels, false);
}

int jsonscan_levels_strict(const char *text, size_t len,
			   const struct jsonscan_level *levels, size_t nlevels)
{
	return jsonscan_levels_top(text, len, levels, nlevels, true);
}

bool jsonscan_int(const char *text, const struct jsonscan_span *span,
		  long long *v)
{
	/* By hand rather than strtoll on a copy: every call's id is read so,
	 * and this is a third of the cost. */
	if (span->len == 0 || span->len > 20)
		return false;
	const char *p = text + span->off, *end = p + span->len;
	bool neg = *p == '-';
	if (neg && ++p == end)
		return false;
	const unsigned long long max =
		neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;
	unsigned long long u = 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return false;
		unsigned d = (unsigned)(*p - '0');
		if (u > max / 10 || (u == max / 10 && d > max % 10))
			return false;
		u = u * 10 + d;
	}
	*v = !neg ? (long long)u : u == max ? LLONG_MIN : -(long long)u;
	return true;
}
