/*
 * What is secret, decided in one place: which values of a server's config
 * (env, headers, args, url, a container's image) and of a host's config
 * file must never be shown, and the set of those values, gathered so that
 * text a server printed can be shown with each of them replaced by "***".
 * A value is secret by what it is: a header value, an env value named or
 * shaped like a secret, a url's credentials and query values, a value from
 * a variable that is not plainly a path. Never by the name of the server
 * it belongs to, and never a common variable such as HOME, USER or PWD.
 * Status, logs, check and setup's dry run all ask here.
 */
#ifndef MCPV_SECRETS_H
#define MCPV_SECRETS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

/* Values shorter than this are not masked: "1" or "on" in an env var is a
 * switch, not a secret, and masking it would garble every line. */
#define SECRETS_MIN_LEN 4

/* ---- the rule ---- */

/* Whether a field, variable, header or option named name holds a secret
 * by its name: "GITHUB_TOKEN", "apiKey", "--password", "Authorization". */
bool secrets_name_is_secret(const char *name);
/* Whether value is shaped like a secret wherever it is: a credential
 * scheme ("Bearer ..."), a known token prefix ("ghp_", "sk-"), a JWT, or
 * a long run of mixed letters and digits. Never a plain path. */
bool secrets_value_is_secret(const char *value);
/* Whether the value a variable gives is a secret: not when the variable
 * is a common one (HOME, USER, PWD, PATH, LANG, XDG_*, ...) or its value
 * is plainly a path (or a list of paths); name may be NULL (unknown). */
bool secrets_var_is_secret(const char *name, const char *value);
/* Whether env variable name's value holds a secret (its name or shape,
 * or a ${VAR} in tpl, its template when it came from one, that is one);
 * a url in it is not secret whole, its credentials are
 * (secrets_mask_url). */
bool secrets_env_is_secret(const char *name, const char *value,
			   const char *tpl);
/* Whether args[i] (of n; tpl: its template when it came from ${VAR},
 * else NULL) holds a secret: from a secret variable, after an option
 * named like one ("--token X", "--api-key=X"), or shaped like one. */
bool secrets_arg_is_secret(char *const *args, size_t n, size_t i,
			   const char *tpl);

/* ---- the set of secret values, to mask text with ---- */

struct secrets;

struct secrets *secrets_new(void);
void secrets_free(struct secrets *sec);
/* Copies value when it is long enough to be a secret. */
void secrets_add(struct secrets *sec, const char *value);
/* The secret values of s's config, by the rule above. */
void secrets_add_server(struct secrets *sec, const struct server_config *s);
/* Every server's secrets and the config's API keys. */
void secrets_add_config(struct secrets *sec, const struct config *cfg);
/* text with every secret replaced by "***", longest first. Caller frees. */
char *secrets_mask(struct secrets *sec, const char *text);

/* ---- views ---- */

/* url with its user info, every query value and a fragment shaped like a
 * secret as "***"; each goes to sec too (may be NULL). Caller frees. */
char *secrets_mask_url(const char *url, struct secrets *sec);
/* s's url as shown: secrets_mask_url, then each secret value a ${VAR}
 * put anywhere in it (a token in its path). Caller frees. */
char *secrets_server_url(const struct server_config *s);
/* The value of env variable name as shown: its template tpl when it came
 * from ${VAR} (a template holds no secret), "***" when it is a secret, a
 * url with its credentials masked, else the value. Caller frees. */
char *secrets_env_shown(const char *name, const char *value, const char *tpl);
/* args[i] as shown: its template when it came from ${VAR} (tpl), else
 * with the part that is a secret as "***" ("--token=***"). Caller
 * frees. */
char *secrets_arg_shown(char *const *args, size_t n, size_t i, const char *tpl);
/* A copy of a host's config file (doc) for showing, with what is secret
 * replaced by "***": in each server entry (under "mcpServers", "servers"
 * or "context_servers", whatever its name) its header values, its env and
 * args by the rule above, its url's credentials; elsewhere every value
 * under a key that names a secret, and strings shaped like one. "${NAME}"
 * alone names where a secret comes from and is kept. Each value replaced
 * goes to sec too (may be NULL). New reference. */
json_t *secrets_mask_json(const json_t *doc, struct secrets *sec);

#endif
