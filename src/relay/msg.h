/*
 * The few messages the relay writes itself, as text: an id spliced into a
 * message without a parse, and an error answer to the host.
 */
#ifndef MCPV_RELAY_MSG_H
#define MCPV_RELAY_MSG_H

#include <stddef.h>

#include "util/jsonscan.h"

/* text with the value at span replaced by with; NUL-terminated, its
 * length in *out_len (to free). */
char *relay_msg_splice(const char *text, size_t len,
		       const struct jsonscan_span *sp, const char *with,
		       size_t *out_len);
/* A JSON-RPC error answer with id (raw JSON text; NULL: null). */
char *relay_msg_error(const char *id, int code, const char *text,
		      size_t *out_len);

#endif
