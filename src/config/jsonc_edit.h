/*
 * Edits of JSONC text made on the text itself: members dropped, values
 * replaced, members added, and every other byte (comments, commas,
 * spacing, line breaks, escapes) left as it was. What is written new is
 * laid out as the text already is.
 */
#ifndef MCPV_JSONC_EDIT_H
#define MCPV_JSONC_EDIT_H

#include <jansson.h>
#include <stddef.h>

#include "config/jsonc.h"

struct jsonc_edit;

/* An edit of j's text; j must outlive it. */
struct jsonc_edit *jsonc_edit_new(const struct jsonc *j);
void jsonc_edit_free(struct jsonc_edit *e);
/* Member m goes, with its comma, and with its lines when it has them to
 * itself. The object keeps a trailing comma only if it had one. */
void jsonc_edit_drop(struct jsonc_edit *e, const struct jsonc_node *m);
/* Node n's value becomes value (and a member's name becomes name, when
 * not NULL), written where n was. */
void jsonc_edit_set(struct jsonc_edit *e, const struct jsonc_node *n,
		    const char *name, const json_t *value);
/* A member added at the end of object obj, after the ones added before. */
void jsonc_edit_add(struct jsonc_edit *e, const struct jsonc_node *obj,
		    const char *name, const json_t *value);
/* The text with the edits made, and frees e. 0 with *out (to free,
 * NUL-terminated) and *len, or -EINVAL when edits overlap (a node inside
 * one dropped or replaced). */
int jsonc_edit_finish(struct jsonc_edit *e, char **out, size_t *len);

/* v as text laid out like the text like (its indent unit, tab or spaces;
 * arrays of plain values on one line or one item a line; ": " or ":";
 * "\r\n" or "\n"; NULL: two spaces, "\n"), each line after the first
 * starting with indent. No final line break. Caller frees. */
char *jsonc_layout(const json_t *v, const char *like, const char *indent);
/* The line break like uses ("\r\n" or "\n"; NULL: "\n"). */
const char *jsonc_eol(const char *like);

#endif
