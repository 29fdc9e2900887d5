/*
 * A validating scan of JSON text that allocates nothing: where the value of
 * a top-level member of an object starts and ends. The forwarding path
 * uses it to pass a server's answer on without parsing and re-serialising
 * it (jansson costs far more than the rest of the path).
 */
#ifndef MCPV_JSONSCAN_H
#define MCPV_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>

#define JSONSCAN_MAX_DEPTH 64
/* Members one scan reports, at most. */
#define JSONSCAN_MAX_KEYS 16

struct jsonscan_span {
	size_t off; /* where the value starts in the text */
	size_t len; /* its length; 0 when the member is absent */
};

/* Scans text, which must be one JSON object (whitespace around it is
 * allowed), validating every value's syntax, and reports the spans of the
 * members named in keys[0..n), n at most JSONSCAN_MAX_KEYS (distinct plain
 * names; a member whose name has escapes never matches). A name met twice
 * reports its last value, as jansson keeps. Returns 0, or -1 when the text is
 * not one valid object within JSONSCAN_MAX_DEPTH. Bytes of strings are not
 * checked as UTF-8 (a server's lines are passed on to clients that read them
 * alike). */
int jsonscan_members(const char *text, size_t len, const char *const *keys,
		     size_t n, struct jsonscan_span *spans);

/* The same, for text from a client that will be forwarded unparsed: -1
 * as well for whatever jansson refuses by default (invalid UTF-8,
 * \u0000, unpaired surrogates, integers beyond int64, reals that
 * overflow; a few finite reals from 1e308 up are refused too), and when a
 * member name of this object (not of nested ones) has escapes or comes
 * twice, or it has more than JSONSCAN_MAX_UNIQUE members: text that
 * jansson parses, and whose members at this level every reader finds
 * alike (an escaped "n\u0061me" is "name" to jansson). */
#define JSONSCAN_MAX_UNIQUE 16
int jsonscan_members_strict(const char *text, size_t len,
			    const char *const *keys, size_t n,
			    struct jsonscan_span *spans);

/* The strict scan of nested objects in one pass: levels[0] names the
 * members of text's object; each further level, those of the object that
 * is the value of member levels[l - 1].nest (held to the same rules as
 * the top: plain names, each once), all absent when that value is not an
 * object. Every span is an offset in text. Saves scanning a member's value
 * once more for each level. */
#define JSONSCAN_MAX_LEVELS 4
struct jsonscan_level {
	const char *const *keys;
	size_t n;
	struct jsonscan_span *spans;
	size_t nest; /* the member holding the next level's object */
};
int jsonscan_levels_strict(const char *text, size_t len,
			   const struct jsonscan_level *levels, size_t nlevels);
/* The same with jsonscan_members' rules (a server's text): names with
 * escapes never match, a name met twice reports its last value. */
int jsonscan_levels(const char *text, size_t len,
		    const struct jsonscan_level *levels, size_t nlevels);

/* Whether span holds a JSON integer (no fraction or exponent) that fits an
 * int64; its value in *v. */
bool jsonscan_int(const char *text, const struct jsonscan_span *span,
		  long long *v);

#endif
