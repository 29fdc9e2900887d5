/*
 * Configuration files: reads an `mcpServers` file and its top-level fields
 * into a struct config, one error per bad server so the good ones still run.
 * Owns the config's lifetime, its fatal error and warnings, and where
 * relative paths in it are anchored.
 */
#include "config/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config_int.h"
#include "config/filter.h"
#include "util/buf.h"
#include "util/fsutil.h"
#include "util/xmalloc.h"

/* A file of a thousand unknown fields needs one screen, not a thousand. */
#define CFG_MAX_WARNINGS 100
/* How much of a name or enum value a message quotes. */
#define CFG_MAX_SHOWN 80

static char *cfg_vformat(const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return xstrdup("");
	char *s = xmalloc((size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

/* Names and values quoted in messages come from the file: escape what a
 * terminal would interpret and cut what would flood it. */
char *config_show(const char *s)
{
	struct buf b;
	buf_init(&b);
	buf_append(&b, "", 0);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (b.len >= CFG_MAX_SHOWN) {
			buf_puts(&b, "...");
			break;
		}
		if (*p == '"' || *p == '\\')
			buf_printf(&b, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			buf_printf(&b, "\\x%02x", *p);
		else
			buf_append(&b, p, 1);
	}
	return buf_steal(&b);
}

const char *config_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	case JSON_NULL:
		return "null";
	}
	return "unknown";
}

bool config_utf8_ok(const char *s)
{
	json_t *t = json_string(s);
	if (t == NULL)
		return false;
	json_decref(t);
	return true;
}

static void cfg_set_fatal(struct config *cfg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void cfg_set_fatal(struct config *cfg, const char *fmt, ...)
{
	if (cfg->fatal)
		return;
	va_list ap;
	va_start(ap, fmt);
	cfg->fatal = cfg_vformat(fmt, ap);
	va_end(ap);
}

void config_warn(struct config *cfg, const char *fmt, ...)
{
	if (cfg->nwarnings > CFG_MAX_WARNINGS)
		return;
	cfg->warnings = xrealloc(cfg->warnings,
				 (cfg->nwarnings + 1) * sizeof *cfg->warnings);
	if (cfg->nwarnings == CFG_MAX_WARNINGS) {
		cfg->warnings[cfg->nwarnings++] =
			xasprintf("%s: more warnings not shown", cfg->path);
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	cfg->warnings[cfg->nwarnings++] = cfg_vformat(fmt, ap);
	va_end(ap);
}

/* The first error of a server is the one reported: later ones are often
 * consequences of it. */
void config_srv_fail(struct config_srv *c, const char *field, const char *fmt,
		     ...)
{
	if (c->s->error)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *what = cfg_vformat(fmt, ap);
	va_end(ap);
	if (field)
		c->s->error = xasprintf("%s: server \"%s\": field \"%s\": %s",
					c->cfg->path, c->shown, field, what);
	else
		c->s->error = xasprintf("%s: server \"%s\": %s", c->cfg->path,
					c->shown, what);
	free(what);
}

/* Lexical: "." and ".." are folded without looking at the disk, so the
 * result is stable whether or not the file exists yet. */
static char *cfg_path_normalize(const char *abs)
{
	size_t n = strlen(abs);
	char *out = xmalloc(n + 2);
	size_t len = 0;
	const char *p = abs;
	while (*p) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		size_t cl = strcspn(p, "/");
		if (cl == 1 && p[0] == '.') {
			/* nothing */
		} else if (cl == 2 && p[0] == '.' && p[1] == '.') {
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
		} else {
			out[len++] = '/';
			memcpy(out + len, p, cl);
			len += cl;
		}
		p += cl;
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = '\0';
	return out;
}

char *config_path_join(const char *dir, const char *rel)
{
	char *joined = xasprintf("%s/%s", dir, rel);
	char *norm = cfg_path_normalize(joined);
	free(joined);
	return norm;
}

/* The folder relative paths in the file are resolved against. */
static char *cfg_dir_of(struct config *cfg, const char *path)
{
	char *cwd = NULL;
	if (path == NULL || path[0] != '/') {
		cwd = getcwd(NULL, 0);
		if (cwd == NULL) {
			config_warn(cfg,
				    "%s: cannot tell the current directory; "
				    "relative paths are taken from /",
				    cfg->path);
			cwd = xstrdup("/");
		}
	}
	if (path == NULL) {
		char *dir = cfg_path_normalize(cwd);
		free(cwd);
		return dir;
	}
	char *abs =
		cwd ? config_path_join(cwd, path) : cfg_path_normalize(path);
	free(cwd);
	char *slash = strrchr(abs, '/');
	if (slash == abs)
		slash[1] = '\0';
	else
		*slash = '\0';
	return abs;
}

/* jansson quotes the text near a syntax error, which may be a literal
 * secret: keep its reason, drop the quote. */
static char *cfg_json_reason(const char *text)
{
	const char *near = strstr(text, " near '");
	return near ? xstrndup(text, (size_t)(near - text)) : xstrdup(text);
}

static int cfg_top_duration(struct config *cfg, const json_t *root,
			    const char *field, int64_t *ms)
{
	json_t *v = json_object_get(root, field);
	if (v == NULL || json_is_null(v))
		return 0;
	if (config_parse_duration(v, ms) == 0)
		return 0;
	cfg_set_fatal(cfg, "%s: field \"%s\": %s", cfg->path, field,
		      CFG_DURATION_FORMS);
	return -EINVAL;
}

/* "apiKeys": an array of non-empty strings, ${VAR} allowed. A bad key
 * makes the whole file unusable: running without the keys the user meant
 * would lock their other clients out, or worse, let a typo in. Messages
 * never quote a key. */
static int cfg_api_keys(struct config *cfg, const json_t *v)
{
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) > CONFIG_MAX_API_KEYS) {
		cfg_set_fatal(cfg,
			      "%s: field \"apiKeys\": expected an array of at "
			      "most %d strings",
			      cfg->path, CONFIG_MAX_API_KEYS);
		return -EINVAL;
	}
	cfg->api_keys = xcalloc(json_array_size(v) + 1, sizeof *cfg->api_keys);
	size_t i;
	json_t *k;
	json_array_foreach(v, i, k)
	{
		const char *raw = json_string_value(k);
		char *val = NULL, *missing = NULL;
		int rc = raw ? config_expand(raw, &val, &missing) : -EINVAL;
		if (rc == -ENOENT) {
			cfg_set_fatal(cfg,
				      "%s: field \"apiKeys\": item %zu: "
				      "variable %s is not set",
				      cfg->path, i + 1, missing);
		} else if (rc < 0 || val[0] == '\0' ||
			   strlen(val) > CONFIG_MAX_API_KEY ||
			   strpbrk(val, " \t\r\n") != NULL) {
			cfg_set_fatal(
				cfg,
				"%s: field \"apiKeys\": item %zu: expected "
				"a non-empty string of at most %d "
				"characters without spaces",
				cfg->path, i + 1, CONFIG_MAX_API_KEY);
			rc = -EINVAL;
		}
		free(missing);
		if (rc < 0) {
			free(val);
			return rc;
		}
		cfg->api_keys[cfg->napi_keys++] = val;
	}
	return 0;
}

static struct config *cfg_new(const char *path)
{
	struct config *cfg = xcalloc(1, sizeof *cfg);
	cfg->path = xstrdup(path ? path : "<config>");
	cfg->idle_timeout_ms = CONFIG_DEFAULT_IDLE_MS;
	cfg->shutdown_grace_ms = CONFIG_DEFAULT_GRACE_MS;
	return cfg;
}

struct config *config_parse(const char *text, size_t len, const char *path)
{
	struct config *cfg = cfg_new(path);
	json_t *root = NULL;
	char *dir = NULL;
	if (len > CONFIG_MAX_FILE_BYTES) {
		cfg_set_fatal(cfg,
			      "%s: larger than %d bytes, the limit for a "
			      "config file",
			      cfg->path, CONFIG_MAX_FILE_BYTES);
		goto out;
	}
	json_error_t jerr;
	root = json_loadb(text ? text : "", text ? len : 0,
			  JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		char *why = cfg_json_reason(jerr.text);
		cfg_set_fatal(cfg, "%s: line %d, column %d: not valid JSON: %s",
			      cfg->path, jerr.line, jerr.column, why);
		free(why);
		goto out;
	}
	if (!json_is_object(root)) {
		cfg_set_fatal(cfg,
			      "%s: expected an object with \"mcpServers\" at "
			      "the top, got %s",
			      cfg->path, config_type_name(root));
		goto out;
	}
	json_t *servers = json_object_get(root, "mcpServers");
	if (servers == NULL) {
		cfg_set_fatal(cfg,
			      "%s: no \"mcpServers\" field: the file must "
			      "hold {\"mcpServers\": {\"name\": {\"command\": "
			      "...}}}",
			      cfg->path);
		goto out;
	}
	if (!json_is_object(servers)) {
		cfg_set_fatal(cfg,
			      "%s: field \"mcpServers\": expected an object "
			      "of servers by name, got %s",
			      cfg->path, config_type_name(servers));
		goto out;
	}
	if (json_object_size(servers) > CONFIG_MAX_SERVERS) {
		cfg_set_fatal(cfg, "%s: %zu servers, at most %d are supported",
			      cfg->path, json_object_size(servers),
			      CONFIG_MAX_SERVERS);
		goto out;
	}
	if (cfg_top_duration(cfg, root, "idleTimeout", &cfg->idle_timeout_ms) <
		    0 ||
	    cfg_top_duration(cfg, root, "shutdownGrace",
			     &cfg->shutdown_grace_ms) < 0)
		goto out;
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v)
	{
		if (strcmp(key, "mcpServers") && strcmp(key, "idleTimeout") &&
		    strcmp(key, "shutdownGrace") && strcmp(key, "apiKeys")) {
			char *shown = config_show(key);
			config_warn(cfg,
				    "%s: unknown top-level field \"%s\" "
				    "(ignored)",
				    cfg->path, shown);
			free(shown);
		}
	}
	if (cfg_api_keys(cfg, json_object_get(root, "apiKeys")) < 0)
		goto out;
	dir = cfg_dir_of(cfg, path);
	cfg->servers =
		xcalloc(json_object_size(servers) + 1, sizeof *cfg->servers);
	json_object_foreach(servers, key, v)
	{
		struct server_config *s = &cfg->servers[cfg->nservers++];
		s->name = xstrdup(key);
		struct config_srv c = {.cfg = cfg,
				       .s = s,
				       .dir = dir,
				       .shown = config_show(key)};
		config_srv_parse(&c, v);
		if (s->prefix == NULL)
			s->prefix = xstrdup(s->name);
		free(c.shown);
	}
out:
	free(dir);
	json_decref(root);
	return cfg;
}

struct config *config_load_file(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	int rc =
		fsutil_read_user_file(path, CONFIG_MAX_FILE_BYTES, &text, &len);
	if (rc == 0) {
		struct config *cfg = config_parse(text, len, path);
		free(text);
		return cfg;
	}
	struct config *cfg = cfg_new(path);
	if (rc == -EFBIG)
		cfg_set_fatal(cfg,
			      "%s: larger than %d bytes, the limit for a "
			      "config file",
			      cfg->path, CONFIG_MAX_FILE_BYTES);
	else
		cfg_set_fatal(cfg, "%s: cannot read: %s", cfg->path,
			      strerror(-rc));
	return cfg;
}

static void cfg_free_kv(struct config_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

static void cfg_free_tpl(char **tpl, size_t n)
{
	for (size_t i = 0; tpl && i < n; i++)
		free(tpl[i]);
	free(tpl);
}

void config_server_clear(struct server_config *s)
{
	free(s->name);
	free(s->command);
	for (size_t i = 0; i < s->nargs; i++) {
		free(s->args[i]);
		if (s->args_tpl)
			free(s->args_tpl[i]);
	}
	free(s->args);
	free(s->args_tpl);
	cfg_free_kv(s->env, s->nenv);
	cfg_free_tpl(s->env_tpl, s->nenv);
	free(s->cwd);
	config_filter_clear(&s->tools);
	config_filter_clear(&s->prompts);
	config_filter_clear(&s->resources);
	free(s->url);
	for (size_t i = 0; s->url_vars && s->url_vars[i]; i++)
		free(s->url_vars[i]);
	free(s->url_vars);
	cfg_free_kv(s->headers, s->nheaders);
	cfg_free_tpl(s->headers_tpl, s->nheaders);
	free(s->prefix);
	config_container_free(s->container);
	config_oauth_free(s->oauth);
	free(s->error);
	free(s->untrusted);
	memset(s, 0, sizeof *s);
}

void config_free(struct config *cfg)
{
	if (cfg == NULL)
		return;
	for (size_t i = 0; i < cfg->nservers; i++)
		config_server_clear(&cfg->servers[i]);
	free(cfg->servers);
	for (size_t i = 0; i < cfg->nwarnings; i++)
		free(cfg->warnings[i]);
	free(cfg->warnings);
	for (size_t i = 0; i < cfg->napi_keys; i++)
		free(cfg->api_keys[i]);
	free(cfg->api_keys);
	free(cfg->path);
	free(cfg->fatal);
	free(cfg);
}

const struct server_config *config_find(const struct config *cfg,
					const char *name)
{
	if (cfg == NULL || name == NULL)
		return NULL;
	for (size_t i = 0; i < cfg->nservers; i++)
		if (strcmp(cfg->servers[i].name, name) == 0)
			return &cfg->servers[i];
	return NULL;
}
