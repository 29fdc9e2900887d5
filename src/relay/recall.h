/*
 * What the relay recalls of the host's session, for the next runtime:
 *   - what a re-initialized session must hear again (the logging level,
 *     the resource subscriptions), kept as the host sent it;
 *   - what the host last saw of each list (tools, prompts, resources): a
 *     digest of the first page the runtime answered. After a new runtime
 *     the relay asks for each list the host had seen and tells the host of
 *     a change only when the answer differs, so a restart that changes
 *     nothing costs the host no round of lists.
 */
#ifndef MCPV_RELAY_RECALL_H
#define MCPV_RELAY_RECALL_H

#include <stdbool.h>
#include <stddef.h>

#include "util/jsonscan.h"

/* A request to send again, by key: "logging" or the subscribed uri. */
struct replay {
	char *key;
	char *line;
	size_t len;
	struct replay *next;
};

/* Keeps what a host request leaves to send again (logging/setLevel,
 * resources/subscribe; unsubscribe drops its uri); other methods keep
 * nothing. params: the span of its "params". */
void recall_keep(struct replay **head, const char *method, const char *line,
		 size_t len, const struct jsonscan_span *params);
void recall_free(struct replay *head);

enum relay_list { RL_NONE = -1, RL_TOOLS, RL_PROMPTS, RL_RESOURCES, RL_N };

struct relay_lists {
	bool seen[RL_N];
	/* The page the host saw had a next page: a change past it cannot be
	 * seen from the first, so any new runtime counts as a change. */
	bool paged[RL_N];
	unsigned char digest[RL_N][32];
};

/* The list a request asks for when it is a first page (no cursor), else
 * RL_NONE. params: the span of its "params" (len 0 when absent). */
enum relay_list relay_list_of(const char *method, const char *line,
			      const struct jsonscan_span *params);
/* "tools/list" and "notifications/tools/list_changed", and so on. */
const char *relay_list_method(enum relay_list l);
const char *relay_list_changed(enum relay_list l);

/* An answer to a first-page list request: what the host now has. */
void relay_lists_seen(struct relay_lists *ls, enum relay_list l,
		      const char *msg, size_t len);
/* The new runtime's answer to the same request: whether the host should
 * look again (it differs, it is an error, or the host's view was paged).
 * Remembered as what the host has from now on. */
bool relay_lists_changed(struct relay_lists *ls, enum relay_list l,
			 const char *msg, size_t len);

#endif
