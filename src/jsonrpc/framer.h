/*
 * Line framer for newline-delimited JSON: cuts a byte stream into complete,
 * non-blank, valid UTF-8 lines within a limit. It owns only the bytes of a
 * line not yet ended; it does not parse JSON.
 */
#ifndef MCPV_JSONRPC_FRAMER_H
#define MCPV_JSONRPC_FRAMER_H

#include <stddef.h>

struct framer;

/* How much of an oversize line's start and end is kept for its owner: room
 * for the JSON-RPC envelope ("jsonrpc", "id"), which serialisers put
 * either first or last. */
#define FRAMER_EDGE 256

/* max_line counts the bytes before the '\n' (a '\r' before it included). */
struct framer *framer_new(size_t max_line);
void framer_free(struct framer *f);

/*
 * Feeds bytes. on_line gets each complete line without its "\n" or "\r\n";
 * the pointer is valid only during the call (into data when the whole line
 * was in it, else into the framer's buffer) and is not NUL-terminated.
 * Blank lines are skipped silently. on_garbage gets a short description of
 * an oversize line (skipped through its newline) or a line that is not
 * valid UTF-8 (skipped). The callbacks must not free f.
 */
void framer_feed(struct framer *f, const char *data, size_t len,
		 void (*on_line)(void *ctx, const char *line, size_t len),
		 void (*on_garbage)(void *ctx, const char *what), void *ctx);

/*
 * Called once an oversize line has ended (its newline came): its first
 * and last bytes (up to FRAMER_EDGE each, raw, maybe cut inside a
 * character), so the owner can tell which request the line answered. The
 * same ctx as framer_feed's. on_garbage still reports the line when it
 * goes over the limit.
 */
void framer_on_overlong(struct framer *f,
			void (*cb)(void *ctx, const char *head, size_t head_len,
				   const char *tail, size_t tail_len));

/*
 * Length of the longest prefix of s that is strict UTF-8 (no overlongs,
 * surrogates, code points above U+10FFFF, or truncated sequences). s is
 * valid when the result equals len.
 */
size_t framer_utf8_prefix(const char *s, size_t len);

#endif
