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

struct jsonscan_span {
	size_t off; /* where the value starts in the text */
	size_t len; /* its length; 0 when the member is absent */
};

/* Scans text, which must be one JSON object (whitespace around it is
 * allowed), validating every value as jansson does by default (so text
 * the scan accepts, jansson parses: UTF-8, no \u0000, paired surrogates,
 * integers within int64, reals that do not overflow; a few finite reals
 * from 1e308 up are refused), and reports the spans of the members
 * named in keys[0..n) (plain names; a member whose name has escapes never
 * matches). A name met twice reports its last value, as jansson keeps.
 * Returns 0, or -1 when the text is not one valid object within
 * JSONSCAN_MAX_DEPTH. */
int jsonscan_members(const char *text, size_t len, const char *const *keys,
		     size_t n, struct jsonscan_span *spans);

/* The same, and -1 as well when a member name of the object (not of
 * nested ones) has escapes or comes twice, or the object has more than
 * JSONSCAN_MAX_UNIQUE members: text whose members at this level every
 * reader finds alike (an escaped "n\u0061me" is "name" to jansson). */
#define JSONSCAN_MAX_UNIQUE 16
int jsonscan_members_unique(const char *text, size_t len,
			    const char *const *keys, size_t n,
			    struct jsonscan_span *spans);

/* Whether span holds a JSON integer (no fraction or exponent) that fits an
 * int64; its value in *v. */
bool jsonscan_int(const char *text, const struct jsonscan_span *span,
		  long long *v);

#endif
