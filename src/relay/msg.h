/*
 * The few messages the relay writes itself, as text: an id spliced into a
 * message without a parse, and an error answer to the host.
 */
#ifndef MCPV_RELAY_MSG_H
#define MCPV_RELAY_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "util/jsonscan.h"

/* text with the value at span replaced by with; NUL-terminated, its
 * length in *out_len (to free). */
char *relay_msg_splice(const char *text, size_t len,
		       const struct jsonscan_span *sp, const char *with,
		       size_t *out_len);
/* The same into buf when it fits (cap bytes with the NUL), else
 * allocated: the result is buf or a string to free. */
char *relay_msg_splice_in(const char *text, size_t len,
			  const struct jsonscan_span *sp, const char *with,
			  char *buf, size_t cap, size_t *out_len);
/* id in decimal into out (at least 21 bytes), NUL-terminated: ours are
 * positive, so no sign and no snprintf on every request. */
void relay_msg_id(char *out, int64_t id);
/* A JSON-RPC error answer with id (raw JSON text; NULL: null). */
char *relay_msg_error(const char *id, int code, const char *text,
		      size_t *out_len);

#endif
