/*
 * The one way text a server (or a client) wrote reaches a terminal or the
 * log: every control byte is shown as an escape, never sent. A tool's
 * description, an error message or a stderr line cannot set a terminal's
 * title, write its clipboard, clear its screen or start a log line of its
 * own.
 */
#ifndef MCPV_ESCAPE_H
#define MCPV_ESCAPE_H

#include <stddef.h>

#include "util/buf.h"

/* Shown as escapes: C0 controls and DEL (`\n`, `\r`, `\t`, else `\xNN`),
 * C1 controls (U+0080..U+009F, `\u0080`), the bidirectional overrides
 * and isolates that reorder what a line shows (`\u202e`), and bytes that
 * are not UTF-8 (`\xNN`). Everything else, backslashes included, as it
 * is. */
#define ESCAPE_LINES 1u /* '\n' and '\t' pass: text shown as lines */

/* Appends s (len bytes) to out, escaped. */
void escape_append(struct buf *out, const char *s, size_t len, unsigned flags);
/* s (a C string; NULL gives "") escaped, as a new string. */
char *escape_str(const char *s, unsigned flags);
/* Escapes s into out (size bytes, at least 1), cut short to fit, never
 * inside an escape or a character; returns the length written. */
size_t escape_into(char *out, size_t size, const char *s, size_t len,
		   unsigned flags);

/* s as one word of a shell command the user can paste: as it is when
 * every byte is plainly safe (letters, digits, / . _ - + : @ % , =),
 * else in single quotes ('\'' for a quote). Caller frees. */
char *escape_shell_word(const char *s);

#endif
