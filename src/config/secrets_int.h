/*
 * What the rule (secrets.c), the set (secrets_set.c) and the views
 * (secrets_show.c) of what is secret share, and no one else uses.
 */
#ifndef MCPV_SECRETS_INT_H
#define MCPV_SECRETS_INT_H

#include <stdbool.h>
#include <stddef.h>

struct secrets;

/* A boolean or the like ("true", "off"): a switch, never a secret. */
bool secrets_switch(const char *v);
/* A path, or a ':'-separated list of them: where something is, which the
 * user needs to read in a message. */
bool secrets_plain_path(const char *v);
/* "scheme://...". */
bool secrets_is_url(const char *v);
/* Walks the ${VAR}s of tpl as config/expand.c expands them; adds each
 * value that is a secret to sec (may be NULL); true when there was
 * one. */
bool secrets_tpl_scan(const char *tpl, struct secrets *sec);
/* The part of literal args[i] that is a secret (all of it, or the value
 * of "--name=value"), or NULL. */
const char *secrets_arg_part(char *const *args, size_t n, size_t i);
/* Adds p's n bytes (sec may be NULL). */
void secrets_add_n(struct secrets *sec, const char *p, size_t n);
/* Adds a credential and, after a scheme ("Bearer TOKEN"), the token
 * alone. */
void secrets_add_credential(struct secrets *sec, const char *v);

#endif
