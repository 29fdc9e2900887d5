/*
 * Internal to src/config: not for use outside that folder. What the files
 * that parse a config file share: the server being parsed and the helpers
 * that word and record its errors and warnings.
 */
#ifndef MCPV_CONFIG_INT_H
#define MCPV_CONFIG_INT_H

#include <jansson.h>
#include <stdbool.h>

#include "config/config.h"

#define CFG_DURATION_FORMS                                                     \
	"expected a duration: milliseconds as a non-negative integer (1500) "  \
	"or a string of digits with ms, s, m or h (\"500ms\", \"2s\", "        \
	"\"10m\", \"1h\")"

/* One server being parsed: where messages go and what they are anchored to. */
struct config_srv {
	struct config *cfg;
	struct server_config *s;
	const char *dir; /* absolute folder of the config file */
	char *shown;	 /* the name as messages quote it */
};

/* s escaped and cut for quoting in a message. Caller frees. */
char *config_show(const char *s);
/* The JSON type of v as a message names it ("object", "number"...). */
const char *config_type_name(const json_t *v);
/* Whether s is valid UTF-8 (as jansson sees it). */
bool config_utf8_ok(const char *s);

/* Adds a warning to cfg, up to a bounded number. */
void config_warn(struct config *cfg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Sets the server's error unless it has one; field may be NULL. */
void config_srv_fail(struct config_srv *c, const char *field, const char *fmt,
		     ...) __attribute__((format(printf, 3, 4)));

/* dir + "/" + rel, with "." and ".." folded lexically. Caller frees. */
char *config_path_join(const char *dir, const char *rel);

/* Fills c->s from obj, the server's entry in "mcpServers". */
void config_srv_parse(struct config_srv *c, const json_t *obj);

/* env (headers false) or headers: field of obj, an object of strings
 * whose values are expanded, into *out and *nout; *tpl gets the template
 * of each value that holds a ${VAR} (NULL for the others; *tpl stays
 * NULL when none does). */
void config_srv_parse_map(struct config_srv *c, const json_t *obj,
			  const char *field, bool headers,
			  struct config_kv **out, char ***tpl, size_t *nout);

/* ---- oauth.c ---- */

/* A url server's "oauth" into c->s->oauth (errors set on the server). */
void config_srv_parse_oauth(struct config_srv *c, const json_t *obj);

/* ---- container.c ---- */

/* A container server, in either form: the "container" field, or a
 * stdio command that is `docker|podman run ...`. Sets the kind and
 * s->container (or the server's error) and returns true; false when the
 * server is no container server. type: the "type" given (0 stdio, 1..3
 * a url's, -1 none). */
bool config_container_settle(struct config_srv *c, const json_t *obj, int type);
void config_container_free(struct container_config *cc);

/* Whether url names a loopback host (127.0.0.1, [::1], localhost). */
bool config_url_is_loopback(const char *url);

/* Expands raw for field (where: "item 2", "\"TOKEN\"" or NULL) into *out
 * (caller frees). On failure sets the server's error, *out is a copy of
 * raw, and returns -EINVAL. */
int config_srv_expand(struct config_srv *c, const char *field,
		      const char *where, const char *raw, char **out);

/* Reads obj's field ("tools", "prompts" or "resources") into f
 * (config/filter.c); an error is set on the server. */
void config_srv_parse_filter(struct config_srv *c, const json_t *obj,
			     const char *field, struct config_filter *f);

#endif
