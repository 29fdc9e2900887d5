/*
 * Filters of a server's lists ("tools", "prompts", "resources": {"allow":
 * [...], "deny": [...]}): the patterns, how they match, and what a filter
 * keeps. A pattern is literal text in which each '*' matches any run of
 * characters (none included, '/' and '_' included); nothing else is
 * special and nothing is expanded. Matching is case-sensitive.
 *
 * What a filter keeps: an item that no deny pattern matches and, when
 * there are allow patterns, that one of them matches (deny wins; an absent
 * or empty allow keeps everything). Tools and prompts are matched by the
 * server's own name, before the prefix; resources by their uri, resource
 * templates by their uriTemplate as written.
 */
#ifndef MCPV_CONFIG_FILTER_H
#define MCPV_CONFIG_FILTER_H

#include <jansson.h>
#include <stdbool.h>

#include "config/config.h"

/* Patterns per list (allow or deny) and bytes per pattern. */
#define CONFIG_FILTER_MAX_PATTERNS 256
#define CONFIG_FILTER_MAX_PATTERN 1024

/* Whether text matches pattern ('*' is the only wildcard). */
bool config_glob_match(const char *pattern, const char *text);

/* Whether f keeps text (NULL text: only when f has no pattern). */
bool config_filter_keeps(const struct config_filter *f, const char *text);

/* Whether f has any pattern. */
bool config_filter_active(const struct config_filter *f);

/* {"allow": [...], "deny": [...]} with the lists f has, NULL when it has
 * none. New reference. */
json_t *config_filter_json(const struct config_filter *f);

/* {"tools": ..., "prompts": ..., "resources": ...} with the active
 * filters of s (an empty object when none). New reference. */
json_t *config_filters_json(const struct server_config *s);

/* Frees the patterns and zeroes f. */
void config_filter_clear(struct config_filter *f);

#endif
