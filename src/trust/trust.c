/*
 * The store of allowed spaces (state/trust.json, mode 0600, replaced
 * atomically) and the loading of a space's .mcp.json through it.
 */
#include "trust/trust.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config.h"
#include "router/router.h"
#include "util/buf.h"
#include "util/fsutil.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

#define TRUST_SPACE_FILE ".mcp.json"

static char *trust_runtime_dir;

void trust_set_state_dir(const char *dir)
{
	free(trust_runtime_dir);
	trust_runtime_dir = dir ? xstrdup(dir) : NULL;
}

void trust_clear_state_dir(void)
{
	trust_set_state_dir(NULL);
}

/* The store as JSON: {"allowed": {"/real/dir": "<sha256 of .mcp.json>"}}.
 * A missing file is an empty store; an unreadable one trusts nothing. */
static json_t *trust_store_read(const char *state_dir)
{
	json_t *store = NULL;
	if (state_dir) {
		char *path = xasprintf("%s/%s", state_dir, TRUST_FILE);
		char *text = NULL;
		size_t len = 0;
		if (fsutil_read_file(path, TRUST_MAX_FILE, &text, &len) == 0)
			store = json_loadb(text, len, 0, NULL);
		free(text);
		free(path);
	}
	if (!json_is_object(store)) {
		json_decref(store);
		store = json_object();
	}
	if (!json_is_object(json_object_get(store, "allowed")))
		json_object_set_new(store, "allowed", json_object());
	return store;
}

static int trust_store_write(const char *state_dir, json_t *store)
{
	int rc = fsutil_mkdir_p(state_dir, 0700);
	if (rc < 0)
		return rc;
	char *path = xasprintf("%s/%s", state_dir, TRUST_FILE);
	char *text = json_dumps(store, JSON_INDENT(2) | JSON_SORT_KEYS);
	rc = fsutil_write_atomic(path, text, strlen(text), 0600);
	free(text);
	free(path);
	return rc;
}

/* dir as a shell word, for a command the user can paste. */
static char *trust_shell_word(const char *dir)
{
	if (dir[strspn(dir, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
			    "VWXYZ0123456789/._-+:@%,=")] == '\0')
		return xstrdup(dir);
	struct buf b;
	buf_init(&b);
	buf_puts(&b, "'");
	for (const char *p = dir; *p; p++)
		if (*p == '\'')
			buf_puts(&b, "'\\''");
		else
			buf_append(&b, p, 1);
	buf_puts(&b, "'");
	return buf_steal(&b);
}

/* The folder file is in, resolved (symlinks and all). */
static char *trust_real_folder(const char *file)
{
	char *copy = xstrdup(file);
	char *slash = strrchr(copy, '/');
	if (slash == copy)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else {
		free(copy);
		copy = xstrdup(".");
	}
	char *real = realpath(copy, NULL);
	free(copy);
	return real;
}

static void trust_mark(struct config *cfg, const struct config *global,
		       const char *file, const char *folder, bool changed)
{
	char *word = trust_shell_word(folder);
	char *cmd = xasprintf("mcpvisor allow %s", word);
	free(word);
	size_t kept = 0;
	for (size_t i = 0; i < cfg->nservers; i++) {
		struct server_config *sv = &cfg->servers[i];
		if (global && config_find(global, sv->name)) {
			config_server_clear(sv);
			continue;
		}
		free(sv->error);
		sv->error = xasprintf(
			"%s: server \"%s\": untrusted: this space's %s is "
			"not allowed%s, so nothing in it runs; run `%s` to "
			"allow it",
			file, sv->name, TRUST_SPACE_FILE,
			changed ? " (it changed since it was allowed)" : "",
			cmd);
		sv->untrusted = xstrdup(cmd);
		cfg->servers[kept++] = *sv;
	}
	cfg->nservers = kept;
	free(cmd);
}

struct config *trust_load_space(const char *state_dir, const char *file,
				const struct config *global)
{
	if (state_dir == NULL)
		state_dir = trust_runtime_dir;
	char *text = NULL;
	size_t len = 0;
	if (fsutil_read_user_file(file, CONFIG_MAX_FILE_BYTES, &text, &len) < 0)
		return config_load_file(file); /* its error, worded once */
	char hash[SHA256_HEX_BYTES];
	sha256_hex(text, len, hash);
	struct config *cfg = config_parse(text, len, file);
	free(text);
	if (cfg->fatal)
		return cfg;
	char *folder = trust_real_folder(file);
	json_t *store = trust_store_read(state_dir);
	const char *want =
		folder ? json_string_value(json_object_get(
				 json_object_get(store, "allowed"), folder))
		       : NULL;
	if (want == NULL || strcmp(want, hash) != 0)
		trust_mark(cfg, global, file, folder ? folder : file,
			   want != NULL);
	json_decref(store);
	free(folder);
	return cfg;
}

const char *trust_refusal(const struct server_config *const *srv, size_t n,
			  const char *name)
{
	for (size_t i = 0; name && i < n; i++) {
		size_t pl = strlen(srv[i]->prefix);
		if (srv[i]->untrusted &&
		    strncmp(name, srv[i]->prefix, pl) == 0 &&
		    strncmp(name + pl, ROUTER_SEP, strlen(ROUTER_SEP)) == 0)
			return srv[i]->error;
	}
	return NULL;
}

int trust_allow(const char *state_dir, const char *dir, char **msg)
{
	char *real = realpath(dir, NULL);
	if (real == NULL) {
		int rc = -errno;
		*msg = xasprintf("cannot allow %s: %s", dir, strerror(errno));
		return rc;
	}
	char *file = xasprintf("%s/%s", strcmp(real, "/") ? real : "",
			       TRUST_SPACE_FILE);
	char *text = NULL;
	size_t len = 0;
	int rc =
		fsutil_read_user_file(file, CONFIG_MAX_FILE_BYTES, &text, &len);
	if (rc < 0) {
		*msg = rc == -ENOENT ? xasprintf("%s has no %s: nothing to "
						 "allow",
						 real, TRUST_SPACE_FILE)
				     : xasprintf("cannot read %s: %s", file,
						 strerror(-rc));
		goto out;
	}
	char hash[SHA256_HEX_BYTES];
	sha256_hex(text, len, hash);
	struct config *cfg = config_parse(text, len, file);
	struct buf names;
	buf_init(&names);
	buf_append(&names, "", 0);
	for (size_t i = 0; i < cfg->nservers; i++)
		buf_printf(&names, "%s%s", i ? ", " : "", cfg->servers[i].name);
	json_t *store = trust_store_read(state_dir);
	json_object_set_new(json_object_get(store, "allowed"), real,
			    json_string(hash));
	rc = trust_store_write(state_dir, store);
	json_decref(store);
	if (rc < 0)
		*msg = xasprintf("cannot write %s/%s: %s", state_dir,
				 TRUST_FILE, strerror(-rc));
	else
		*msg = xasprintf(
			"allowed %s (%zu server%s%s%s%s); a changed file "
			"needs `mcpvisor allow` again; sessions already open "
			"pick it up on `mcpvisor reload`",
			file, cfg->nservers, cfg->nservers == 1 ? "" : "s",
			cfg->nservers ? ": " : "", names.data,
			cfg->fatal ? "; note: it does not parse" : "");
	buf_free(&names);
	config_free(cfg);
out:
	free(text);
	free(file);
	free(real);
	return rc;
}

int trust_revoke(const char *state_dir, const char *dir, char **msg)
{
	/* A folder that is gone can still be forgotten by the path given. */
	char *real = realpath(dir, NULL);
	const char *key = real ? real : dir;
	json_t *store = trust_store_read(state_dir);
	json_t *allowed = json_object_get(store, "allowed");
	int rc = 0;
	if (json_object_get(allowed, key) == NULL) {
		*msg = xasprintf("%s was not allowed", key);
		goto out;
	}
	json_object_del(allowed, key);
	rc = trust_store_write(state_dir, store);
	*msg = rc < 0 ? xasprintf("cannot write %s/%s: %s", state_dir,
				  TRUST_FILE, strerror(-rc))
		      : xasprintf("revoked %s: its %s runs nothing until "
				  "allowed again",
				  key, TRUST_SPACE_FILE);
out:
	json_decref(store);
	free(real);
	return rc;
}
