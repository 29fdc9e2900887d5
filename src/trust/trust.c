/*
 * The store of allowed spaces (state/trust.json, mode 0600, replaced
 * atomically) and the loading of a space's .mcp.json through it.
 */
#include "trust/trust.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "router/router.h"
#include "util/buf.h"
#include "util/escape.h"
#include "util/fsutil.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

#define TRUST_SPACE_FILE ".mcp.json"
/* Longer than a coarse file timestamp tick (one jiffy, 10 ms at most). */
#define TRUST_RACY_MS 50

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
	char *word = escape_shell_word(folder);
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

void (*trust_space_read_hook)(const char *file);

static void trust_space_identity(struct trust_space *ts, const struct stat *st)
{
	ts->have_id = true;
	ts->dev = st->st_dev;
	ts->ino = st->st_ino;
	ts->size = st->st_size;
	ts->mtime = st->st_mtim;
	ts->ctime = st->st_ctim;
}

static bool trust_space_same(const struct trust_space *a, const struct stat *st)
{
	return a && a->have_id && !a->racy && a->err == 0 &&
	       a->dev == st->st_dev && a->ino == st->st_ino &&
	       a->size == st->st_size &&
	       a->mtime.tv_sec == st->st_mtim.tv_sec &&
	       a->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       a->ctime.tv_sec == st->st_ctim.tv_sec &&
	       a->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* Opens the file without waiting on it (a FIFO's open would block until a
 * writer comes), refuses anything but a regular file, then reads it. */
static int trust_space_read_file(struct trust_space *ts)
{
	if (trust_space_read_hook)
		trust_space_read_hook(ts->file);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int fd = open(ts->file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	close(fd);
	/* The regular file read as configs are (a link followed, the
	 * limit); its identity is the one checked before reading. */
	trust_space_identity(ts, &st);
	/* As git's racily clean entries: a file changed within a timestamp
	 * tick of this read could change again with the same identity, so
	 * it is not reused but read again next time. */
	int64_t age_ms = ((int64_t)now.tv_sec - st.st_ctim.tv_sec) * 1000 +
			 (now.tv_nsec - st.st_ctim.tv_nsec) / 1000000;
	ts->racy = age_ms < TRUST_RACY_MS;
	ts->reads = 1;
	return fsutil_read_user_file(ts->file, CONFIG_MAX_FILE_BYTES, &ts->text,
				     &ts->len);
}

struct trust_space *trust_space_read(const char *state_dir, const char *file,
				     const struct trust_space *prev)
{
	if (state_dir == NULL)
		state_dir = trust_runtime_dir;
	struct trust_space *ts = xcalloc(1, sizeof *ts);
	ts->refs = 1;
	ts->file = xstrdup(file);
	struct stat st;
	if (stat(ts->file, &st) < 0) {
		ts->err = -errno;
	} else if (trust_space_same(prev, &st)) {
		ts->text = xmalloc(prev->len + 1);
		memcpy(ts->text, prev->text, prev->len + 1);
		ts->len = prev->len;
		trust_space_identity(ts, &st);
	} else {
		ts->err = trust_space_read_file(ts);
	}
	if (ts->err == -ENOENT)
		return ts;
	if (ts->err < 0) {
		free(ts->text);
		ts->text = NULL;
		if (ts->err == -EFBIG)
			ts->msg = xasprintf("%s: larger than %d bytes, the "
					    "limit for a config file",
					    ts->file, CONFIG_MAX_FILE_BYTES);
		else if (ts->err == -EINVAL)
			ts->msg = xasprintf("%s: cannot read: not a regular "
					    "file (a FIFO, device or folder "
					    "is never read)",
					    ts->file);
		else
			ts->msg = xasprintf("%s: cannot read: %s", ts->file,
					    strerror(-ts->err));
		return ts;
	}
	sha256_hex(ts->text, ts->len, ts->hash);
	ts->folder = trust_real_folder(ts->file);
	json_t *store = trust_store_read(state_dir);
	const char *want = ts->folder
				   ? json_string_value(json_object_get(
					     json_object_get(store, "allowed"),
					     ts->folder))
				   : NULL;
	ts->allowed = want ? xstrdup(want) : NULL;
	json_decref(store);
	return ts;
}

void trust_space_ref(struct trust_space *ts)
{
	ts->refs++;
}

void trust_space_unref(struct trust_space *ts)
{
	if (ts == NULL || --ts->refs > 0)
		return;
	free(ts->msg);
	free(ts->file);
	free(ts->text);
	free(ts->folder);
	free(ts->allowed);
	free(ts);
}

struct config *trust_space_config(const struct trust_space *ts,
				  const struct config *global)
{
	if (ts->err == -ENOENT)
		return NULL;
	if (ts->err < 0) {
		struct config *cfg = config_parse("", 0, ts->file);
		free(cfg->fatal);
		cfg->fatal = xstrdup(ts->msg);
		return cfg;
	}
	struct config *cfg = config_parse(ts->text, ts->len, ts->file);
	if (cfg->fatal)
		return cfg;
	if (ts->allowed == NULL || strcmp(ts->allowed, ts->hash) != 0)
		trust_mark(cfg, global, ts->file,
			   ts->folder ? ts->folder : ts->file,
			   ts->allowed != NULL);
	return cfg;
}

struct config *trust_load_space(const char *state_dir, const char *file,
				const struct config *global)
{
	struct trust_space *ts = trust_space_read(state_dir, file, NULL);
	struct config *cfg = trust_space_config(ts, global);
	if (cfg == NULL) {
		cfg = config_parse("", 0, file);
		free(cfg->fatal);
		cfg->fatal = xasprintf("%s: cannot read: %s", file,
				       strerror(-ts->err));
	}
	trust_space_unref(ts);
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
