/*
 * One `mcpServers` entry: checks each field of a server, expands and anchors
 * its values, and settles its kind, recording the first error on the
 * server_config and unknown fields as warnings.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "config/config_int.h"
#include "util/xmalloc.h"

#define CFG_MAX_PREFIX 64

static const char *const cfg_server_fields[] = {
	"command",	  "args",	 "env",		"cwd",	    "url",
	"headers",	  "type",	 "scope",	"exposure", "prefix",
	"startupTimeout", "idleTimeout", "toolTimeout", "disabled", "container",
	"tools",	  "prompts",	 "resources",	"oauth",    NULL,
};

/* 0: absent (or null), 1: *out set, -1: wrong type or too long. */
static int srv_get_string(struct config_srv *c, const json_t *obj,
			  const char *field, const char **out)
{
	json_t *v = json_object_get(obj, field);
	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v)) {
		config_srv_fail(c, field, "expected a string, got %s",
				config_type_name(v));
		return -1;
	}
	if (json_string_length(v) > CONFIG_MAX_STRING) {
		config_srv_fail(c, field, "longer than %d bytes",
				CONFIG_MAX_STRING);
		return -1;
	}
	*out = json_string_value(v);
	return 1;
}

static void srv_check_name(struct config_srv *c)
{
	const char *name = c->s->name;
	size_t len = strlen(name);
	if (len == 0) {
		config_srv_fail(c, NULL, "the name must not be empty");
		return;
	}
	if (len > CONFIG_MAX_NAME) {
		config_srv_fail(c, NULL,
				"the name is longer than %d characters",
				CONFIG_MAX_NAME);
		return;
	}
	if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-") != len)
		config_srv_fail(
			c, NULL,
			"the name may only hold letters, digits, \"_\", "
			"\".\" and \"-\"");
}

/* command or cwd: expanded, then anchored to the config file's folder when
 * relative (a command only when it has a '/'; bare names go to PATH). */
static char *srv_parse_path(struct config_srv *c, const json_t *obj,
			    const char *field, bool always_anchor)
{
	const char *raw;
	if (srv_get_string(c, obj, field, &raw) <= 0)
		return NULL;
	if (*raw == '\0') {
		config_srv_fail(c, field, "must not be empty");
		return NULL;
	}
	char *val;
	if (config_srv_expand(c, field, NULL, raw, &val) < 0)
		return val;
	if (*val == '\0') {
		config_srv_fail(c, field, "empty after expansion");
		return val;
	}
	if (val[0] != '/' && (always_anchor || strchr(val, '/'))) {
		char *abs = config_path_join(c->dir, val);
		free(val);
		val = abs;
		if (!config_utf8_ok(val))
			config_srv_fail(c, field,
					"the resolved path is not UTF-8");
	}
	return val;
}

static void srv_parse_args(struct config_srv *c, const json_t *obj)
{
	struct server_config *s = c->s;
	json_t *a = json_object_get(obj, "args");
	if (a == NULL || json_is_null(a))
		return;
	if (!json_is_array(a)) {
		config_srv_fail(c, "args",
				"expected an array of strings, got %s",
				config_type_name(a));
		return;
	}
	size_t n = json_array_size(a);
	if (n > CONFIG_MAX_ARGS) {
		config_srv_fail(c, "args", "%zu items, at most %d are allowed",
				n, CONFIG_MAX_ARGS);
		return;
	}
	/* One spare NULL so the list can go to exec as it is. */
	s->args = xcalloc(n + 1, sizeof *s->args);
	s->args_tpl = xcalloc(n + 1, sizeof *s->args_tpl);
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(a, i);
		if (!json_is_string(v)) {
			config_srv_fail(
				c, "args",
				"expected an array of strings, got %s at "
				"index %zu",
				config_type_name(v), i);
			continue;
		}
		if (json_string_length(v) > CONFIG_MAX_STRING) {
			config_srv_fail(c, "args",
					"item %zu: longer than %d bytes", i,
					CONFIG_MAX_STRING);
			continue;
		}
		char *where = xasprintf("item %zu", i);
		if (strstr(json_string_value(v), "${"))
			s->args_tpl[s->nargs] = xstrdup(json_string_value(v));
		config_srv_expand(c, "args", where, json_string_value(v),
				  &s->args[s->nargs++]);
		free(where);
	}
}

static bool cfg_header_name_ok(const char *k)
{
	size_t len = strlen(k);
	return len > 0 && strspn(k, "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				    "!#$%&'*+-.^_`|~") == len;
}

static bool cfg_env_name_ok(const char *k)
{
	return *k != '\0' && strchr(k, '=') == NULL;
}

/* env or headers: an object of strings whose values are expanded. */
void config_srv_parse_map(struct config_srv *c, const json_t *obj,
			  const char *field, bool headers,
			  struct config_kv **out, char ***tpl, size_t *nout)
{
	json_t *m = json_object_get(obj, field);
	if (m == NULL || json_is_null(m))
		return;
	if (!json_is_object(m)) {
		config_srv_fail(c, field,
				"expected an object of strings, got %s",
				config_type_name(m));
		return;
	}
	size_t n = json_object_size(m);
	if (n > CONFIG_MAX_ENV) {
		config_srv_fail(c, field, "%zu entries, at most %d are allowed",
				n, CONFIG_MAX_ENV);
		return;
	}
	if (n == 0)
		return;
	struct config_kv *kv = xcalloc(n, sizeof *kv);
	size_t i = 0;
	const char *key;
	json_t *v;
	json_object_foreach(m, key, v)
	{
		char *shown = config_show(key);
		char *where = xasprintf("\"%s\"", shown);
		free(shown);
		if (strlen(key) > CONFIG_MAX_STRING ||
		    !(headers ? cfg_header_name_ok(key)
			      : cfg_env_name_ok(key))) {
			config_srv_fail(c, field, "%s is not a valid %s name",
					where, headers ? "header" : "variable");
		} else if (!json_is_string(v)) {
			config_srv_fail(
				c, field,
				"expected an object of strings, got %s for "
				"%s",
				config_type_name(v), where);
		} else if (json_string_length(v) > CONFIG_MAX_STRING) {
			config_srv_fail(c, field, "%s: longer than %d bytes",
					where, CONFIG_MAX_STRING);
		} else {
			kv[i].key = xstrdup(key);
			if (strstr(json_string_value(v), "${")) {
				if (*tpl == NULL)
					*tpl = xcalloc(n + 1, sizeof **tpl);
				(*tpl)[i] = xstrdup(json_string_value(v));
			}
			config_srv_expand(c, field, where, json_string_value(v),
					  &kv[i].value);
			/* A line break would let a value add headers of its
			 * own to every request. */
			if (headers && strpbrk(kv[i].value, "\r\n"))
				config_srv_fail(c, field,
						"%s: the value holds a line "
						"break",
						where);
			i++;
		}
		free(where);
	}
	*out = kv;
	*nout = i;
}

static void srv_parse_url(struct config_srv *c, const json_t *obj)
{
	const char *raw;
	if (srv_get_string(c, obj, "url", &raw) <= 0)
		return;
	if (config_srv_expand(c, "url", NULL, raw, &c->s->url) < 0)
		return;
	c->s->url_vars = config_expand_values(raw);
	const char *u = c->s->url;
	if (strncasecmp(u, "http://", 7) != 0 &&
	    strncasecmp(u, "https://", 8) != 0) {
		config_srv_fail(c, "url",
				"must start with http:// or https://");
		return;
	}
	for (const unsigned char *p = (const unsigned char *)u; *p; p++) {
		if (*p <= 0x20 || *p == 0x7f) {
			config_srv_fail(c, "url",
					"holds a space or a control character");
			return;
		}
	}
}

/* Returns the enum index of v among names, -1 when absent, -2 when bad. */
static int srv_get_enum(struct config_srv *c, const json_t *obj,
			const char *field, const char *const *names,
			const char *expected)
{
	const char *v;
	int r = srv_get_string(c, obj, field, &v);
	if (r == 0)
		return -1;
	if (r < 0)
		return -2;
	for (int i = 0; names[i]; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	char *shown = config_show(v);
	config_srv_fail(c, field, "unknown value \"%s\": expected %s", shown,
			expected);
	free(shown);
	return -2;
}

static void srv_get_duration(struct config_srv *c, const json_t *obj,
			     const char *field, int64_t *ms)
{
	json_t *v = json_object_get(obj, field);
	if (v == NULL || json_is_null(v))
		return;
	if (config_parse_duration(v, ms) < 0)
		config_srv_fail(c, field, CFG_DURATION_FORMS);
}

static void srv_parse_prefix(struct config_srv *c, const json_t *obj)
{
	const char *v;
	if (srv_get_string(c, obj, "prefix", &v) <= 0)
		return;
	size_t len = strlen(v);
	if (len > CFG_MAX_PREFIX) {
		config_srv_fail(c, "prefix", "longer than %d characters",
				CFG_MAX_PREFIX);
		return;
	}
	if (strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789_-") != len) {
		config_srv_fail(
			c, "prefix",
			"may only hold letters, digits, \"_\" and \"-\"");
		return;
	}
	c->s->prefix = xstrdup(v);
}

enum srv_type { SRV_TYPE_STDIO, SRV_TYPE_HTTP, SRV_TYPE_SHTTP, SRV_TYPE_SSE };

/* The host of a url ("[::1]" keeps its brackets), or NULL when it has
 * none; *len its length. */
static const char *srv_url_host(const char *url, size_t *len)
{
	const char *p = strstr(url, "://");
	if (p == NULL)
		return NULL;
	p += 3;
	size_t alen = strcspn(p, "/?#");
	const char *at = memrchr(p, '@', alen);
	if (at) {
		alen -= (size_t)(at + 1 - p);
		p = at + 1;
	}
	if (*p == '[') {
		const char *close = memchr(p, ']', alen);
		if (close == NULL)
			return NULL;
		*len = (size_t)(close + 1 - p);
	} else {
		*len = strcspn(p, ":/?#");
		if (*len > alen)
			*len = alen;
	}
	return *len ? p : NULL;
}

/* The program a local server starts listens where its url says, and that
 * port is one the runtime hands out on loopback: any other host would
 * mean a server reachable from the network, or a url that never reaches
 * the program. */
bool config_url_is_loopback(const char *url)
{
	static const char *const hosts[] = {"127.0.0.1", "[::1]", "localhost",
					    NULL};
	size_t len;
	const char *h = srv_url_host(url, &len);
	for (int i = 0; h && hosts[i]; i++)
		if (strlen(hosts[i]) == len &&
		    strncasecmp(h, hosts[i], len) == 0)
			return true;
	return false;
}

#define SRV_PORT "{port}"

/* {port} is replaced only in a local server's args, env values and url:
 * anywhere else it would reach the program or the network as written. */
static void srv_check_port_places(struct config_srv *c)
{
	struct server_config *s = c->s;
	bool local = s->command != NULL && s->url != NULL;
	if (s->command && strstr(s->command, SRV_PORT))
		config_srv_fail(c, "command",
				"{port} is replaced only in \"args\", "
				"\"env\" and \"url\"");
	if (s->cwd && strstr(s->cwd, SRV_PORT))
		config_srv_fail(c, "cwd",
				"{port} is replaced only in \"args\", "
				"\"env\" and \"url\"");
	for (size_t i = 0; i < s->nheaders; i++)
		if (strstr(s->headers[i].key, SRV_PORT) ||
		    strstr(s->headers[i].value, SRV_PORT)) {
			config_srv_fail(c, "headers",
					"{port} is replaced only in "
					"\"args\", \"env\" and \"url\"");
			break;
		}
	if (local)
		return;
	bool in_args = false, in_env = false;
	for (size_t i = 0; i < s->nargs; i++)
		in_args =
			in_args || (s->args[i] && strstr(s->args[i], SRV_PORT));
	for (size_t i = 0; i < s->nenv; i++)
		in_env = in_env || strstr(s->env[i].value, SRV_PORT);
	/* A stdio server might mean it literally: say so, do not refuse. */
	if (s->command && (in_args || in_env))
		config_warn(c->cfg,
			    "%s: server \"%s\": field \"%s\": {port} is "
			    "passed as written: it is replaced only for a "
			    "local HTTP server (\"command\" and \"url\")",
			    c->cfg->path, c->shown, in_args ? "args" : "env");
}

/* Settles the kind and transport from the fields present and checks
 * "type" agrees. */
static void srv_settle_kind(struct config_srv *c, const json_t *obj, int type)
{
	struct server_config *s = c->s;
	bool cmd = s->command != NULL, url = s->url != NULL;
	static const char *const names[] = {"stdio", "http", "streamable-http",
					    "sse"};
	if (config_container_settle(c, obj, type)) {
		srv_check_port_places(c);
		return;
	}
	if (type == SRV_TYPE_STDIO && url) {
		config_srv_fail(c, "type", "\"stdio\" does not take a \"url\"");
	} else if (type == SRV_TYPE_STDIO && !cmd) {
		config_srv_fail(c, "type", "\"stdio\" needs a \"command\"");
	} else if (type > SRV_TYPE_STDIO && !url) {
		config_srv_fail(c, "type", "\"%s\" needs a \"url\"",
				names[type]);
	}
	s->http_type = type == SRV_TYPE_SSE ? HTTP_TYPE_SSE
		       : type == SRV_TYPE_HTTP || type == SRV_TYPE_SHTTP
			       ? HTTP_TYPE_STREAMABLE
			       : HTTP_TYPE_AUTO;
	if (cmd && url) {
		s->kind = SERVER_HTTP_LOCAL;
		if (strstr(s->url, SRV_PORT) == NULL)
			config_srv_fail(
				c, "url",
				"with \"command\" the url must contain "
				"{port}, where mcpvisor puts the port it "
				"gives the server");
		else if (!config_url_is_loopback(s->url))
			config_srv_fail(
				c, "url",
				"with \"command\" the url's host must be "
				"loopback (127.0.0.1, [::1] or localhost): "
				"mcpvisor gives the server a loopback port");
	} else if (url) {
		s->kind = SERVER_HTTP_REMOTE;
		if (strstr(s->url, SRV_PORT))
			config_srv_fail(
				c, "url",
				"{port} is only for a local server (with "
				"\"command\"); a remote url names its own "
				"port");
	} else {
		s->kind = SERVER_STDIO;
		if (!cmd)
			config_srv_fail(
				c, "command",
				"missing: a server needs \"command\" (a "
				"local program) or \"url\" (an HTTP "
				"server)");
	}
	srv_check_port_places(c);
}

static void srv_warn_fields(struct config_srv *c, const json_t *obj)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)obj, key, v)
	{
		bool known = false;
		for (int i = 0; cfg_server_fields[i]; i++)
			known = known || strcmp(key, cfg_server_fields[i]) == 0;
		if (known)
			continue;
		char *shown = config_show(key);
		config_warn(c->cfg,
			    "%s: server \"%s\": unknown field \"%s\" (ignored)",
			    c->cfg->path, c->shown, shown);
		free(shown);
	}
	struct server_config *s = c->s;
	if (s->command == NULL && s->url != NULL) {
		static const char *const local[] = {"args", "env", "cwd"};
		for (size_t i = 0; i < 3; i++) {
			json_t *lv = json_object_get(obj, local[i]);
			if (lv != NULL && !json_is_null(lv))
				config_warn(
					c->cfg,
					"%s: server \"%s\": field \"%s\" is "
					"ignored without \"command\"",
					c->cfg->path, c->shown, local[i]);
		}
	}
	json_t *h = json_object_get(obj, "headers");
	if (s->url == NULL && s->command != NULL && h != NULL &&
	    !json_is_null(h))
		config_warn(c->cfg,
			    "%s: server \"%s\": field \"headers\" is ignored "
			    "without \"url\"",
			    c->cfg->path, c->shown);
}

void config_srv_parse(struct config_srv *c, const json_t *obj)
{
	static const char *const types[] = {"stdio", "http", "streamable-http",
					    "sse", NULL};
	static const char *const scopes[] = {"session", "space", "app", NULL};
	/* codemode and codemode-deferred are other hosts' names for
	 * deferred. */
	static const char *const exposures[] = {
		"direct", "hidden", "deferred", "codemode", "codemode-deferred",
		NULL};
	struct server_config *s = c->s;
	s->startup_timeout_ms = CONFIG_DEFAULT_STARTUP_MS;
	s->idle_timeout_ms = -1;
	s->tool_timeout_ms = 0;
	srv_check_name(c);
	if (!json_is_object(obj)) {
		config_srv_fail(
			c, NULL,
			"expected an object with \"command\" or \"url\", got "
			"%s",
			config_type_name(obj));
		return;
	}
	s->command = srv_parse_path(c, obj, "command", false);
	srv_parse_args(c, obj);
	config_srv_parse_map(c, obj, "env", false, &s->env, &s->env_tpl,
			     &s->nenv);
	s->cwd = srv_parse_path(c, obj, "cwd", true);
	srv_parse_url(c, obj);
	config_srv_parse_map(c, obj, "headers", true, &s->headers,
			     &s->headers_tpl, &s->nheaders);
	config_srv_parse_oauth(c, obj);
	int type = srv_get_enum(c, obj, "type", types,
				"\"stdio\", \"http\", \"streamable-http\" or "
				"\"sse\"");
	int scope = srv_get_enum(c, obj, "scope", scopes,
				 "\"session\", \"space\" or \"app\"");
	if (scope >= 0)
		s->scope = (enum server_scope)scope;
	int exposure = srv_get_enum(
		c, obj, "exposure", exposures,
		"\"direct\", \"hidden\" or \"deferred\" (or its aliases "
		"\"codemode\" and \"codemode-deferred\")");
	if (exposure >= 0)
		s->exposure = exposure >= 2 ? EXPOSE_DEFERRED
					    : (enum server_exposure)exposure;
	srv_parse_prefix(c, obj);
	/* After the prefix: a pattern written with it is pointed out. */
	config_srv_parse_filter(c, obj, "tools", &s->tools);
	config_srv_parse_filter(c, obj, "prompts", &s->prompts);
	config_srv_parse_filter(c, obj, "resources", &s->resources);
	srv_get_duration(c, obj, "startupTimeout", &s->startup_timeout_ms);
	srv_get_duration(c, obj, "idleTimeout", &s->idle_timeout_ms);
	srv_get_duration(c, obj, "toolTimeout", &s->tool_timeout_ms);
	json_t *d = json_object_get(obj, "disabled");
	if (json_is_boolean(d))
		s->disabled = json_is_true(d);
	else if (d != NULL && !json_is_null(d))
		config_srv_fail(c, "disabled", "expected true or false, got %s",
				config_type_name(d));
	srv_settle_kind(c, obj, type);
	srv_warn_fields(c, obj);
}
