/*
 * The secret values of configs (env and header values, arguments and a
 * container image that came from ${VAR}, a url's user info and query
 * values, API keys), gathered so that
 * text a server printed can be shown with each of them replaced by "***".
 */
#ifndef MCPV_SECRETS_H
#define MCPV_SECRETS_H

#include "config/config.h"

/* Values shorter than this are not masked: "1" or "on" in an env var is a
 * switch, not a secret, and masking it would garble every line. */
#define SECRETS_MIN_LEN 4

struct secrets;

struct secrets *secrets_new(void);
void secrets_free(struct secrets *sec);
/* Copies value when it is long enough to be a secret. */
void secrets_add(struct secrets *sec, const char *value);
void secrets_add_server(struct secrets *sec, const struct server_config *s);
/* Every server's secrets and the config's API keys. */
void secrets_add_config(struct secrets *sec, const struct config *cfg);
/* text with every secret replaced by "***", longest first. Caller frees. */
char *secrets_mask(struct secrets *sec, const char *text);

#endif
