/*
 * The tool cache: owns CACHE_DIR/tools/ and CACHE_DIR/salt, writes each
 * server's last lists atomically under a hashed name and reads them back
 * only when the file proves to be ours in every field.
 */
#include "toolcache/toolcache.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/random.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

#define TOOLCACHE_NAME_LEN 64
#define TOOLCACHE_SALT_LEN 64
#define TOOLCACHE_SALT_RANDOM 32
/* Room for cache_dir plus "/tools/<64 hex>.json" and fsutil's tmp suffix. */
#define TOOLCACHE_MAX_DIR (PATH_MAX - 128)

struct toolcache {
	char *dir; /* CACHE_DIR/tools */
	char salt[TOOLCACHE_SALT_LEN + 1];
};

/* The only lists the runtime keeps; anything else in a file is foreign. */
static const char *const toolcache_list_keys[] = {
	"tools",
	"prompts",
	"resources",
	"resourceTemplates",
};

/* Names become paths, so only our own hash format is ever accepted. */
static bool toolcache_name_ok(const char *name)
{
	if (name == NULL)
		return false;
	size_t i;
	for (i = 0; name[i] != '\0'; i++) {
		char c = name[i];
		if (i >= TOOLCACHE_NAME_LEN)
			return false;
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return i == TOOLCACHE_NAME_LEN;
}

static bool toolcache_salt_ok(const char *s, size_t len)
{
	if (len != TOOLCACHE_SALT_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
		      (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

static int toolcache_salt_make(const char *path, char out[65])
{
	random_hex(out, TOOLCACHE_SALT_RANDOM);
	return fsutil_write_atomic(path, out, TOOLCACHE_SALT_LEN, 0600);
}

/* A salt that cannot be read back is replaced: the old names are then
 * unreachable, which costs one live listing per server, never trust. */
static int toolcache_salt_load(const char *cache_dir, char out[65])
{
	char *path = xasprintf("%s/salt", cache_dir);
	char *data = NULL;
	size_t len = 0;
	int rc = fsutil_read_file(path, TOOLCACHE_SALT_LEN, &data, &len);
	if (rc == 0 && toolcache_salt_ok(data, len)) {
		memcpy(out, data, TOOLCACHE_SALT_LEN + 1);
		struct stat st;
		/* The salt guards fingerprints of secrets: keep it private
		 * even if someone loosened its mode. */
		if (stat(path, &st) == 0 && (st.st_mode & 077) != 0)
			(void)chmod(path, 0600);
		rc = 0;
		goto out;
	}
	if (rc != -ENOENT)
		log_warn("tool cache salt %s is unusable; making a new one",
			 path);
	rc = toolcache_salt_make(path, out);
	if (rc < 0)
		log_error("cannot write tool cache salt %s: %s", path,
			  strerror(-rc));
out:
	free(data);
	free(path);
	return rc;
}

int toolcache_open(const char *cache_dir, struct toolcache **out)
{
	*out = NULL;
	if (cache_dir == NULL || cache_dir[0] == '\0' ||
	    strlen(cache_dir) > TOOLCACHE_MAX_DIR)
		return -EINVAL;
	struct toolcache *tc = xcalloc(1, sizeof *tc);
	tc->dir = xasprintf("%s/tools", cache_dir);
	int rc = fsutil_mkdir_p(tc->dir, 0700);
	if (rc < 0) {
		log_error("cannot create %s: %s", tc->dir, strerror(-rc));
		goto fail;
	}
	/* mkdir leaves an existing folder's mode alone; ours is private. */
	if (chmod(tc->dir, 0700) < 0) {
		rc = -errno;
		log_error("cannot chmod %s: %s", tc->dir, strerror(-rc));
		goto fail;
	}
	rc = toolcache_salt_load(cache_dir, tc->salt);
	if (rc < 0)
		goto fail;
	*out = tc;
	return 0;
fail:
	toolcache_free(tc);
	return rc;
}

void toolcache_free(struct toolcache *tc)
{
	if (tc == NULL)
		return;
	free(tc->dir);
	free(tc);
}

const char *toolcache_salt(const struct toolcache *tc)
{
	return tc->salt;
}

char *toolcache_name(const json_t *ident)
{
	if (ident == NULL)
		return NULL;
	char *canon = json_dumps(ident, JSON_SORT_KEYS | JSON_COMPACT);
	if (canon == NULL)
		return NULL;
	char *hex = xmalloc(SHA256_HEX_BYTES);
	sha256_hex(canon, strlen(canon), hex);
	free(canon);
	return hex;
}

static char *toolcache_path(const struct toolcache *tc, const char *name)
{
	return xasprintf("%s/%s.json", tc->dir, name);
}

static bool toolcache_array_of_objects(const json_t *a)
{
	if (!json_is_array(a))
		return false;
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		if (!json_is_object(v))
			return false;
	}
	return true;
}

static bool toolcache_lists_ok(const json_t *lists)
{
	if (!json_is_object(lists))
		return false;
	const char *key;
	json_t *v;
	size_t nkeys = sizeof toolcache_list_keys / sizeof *toolcache_list_keys;
	json_object_foreach((json_t *)lists, key, v)
	{
		bool known = false;
		for (size_t i = 0; i < nkeys; i++)
			if (strcmp(key, toolcache_list_keys[i]) == 0)
				known = true;
		if (!known || !toolcache_array_of_objects(v))
			return false;
	}
	return true;
}

struct toolcache_dump {
	struct buf b;
	bool too_big;
};

/* Stops the dump as soon as it passes the limit, so an oversize list never
 * costs more than the limit in memory. */
static int toolcache_dump_cb(const char *data, size_t size, void *arg)
{
	struct toolcache_dump *d = arg;
	if (size > TOOLCACHE_MAX_BYTES - d->b.len) {
		d->too_big = true;
		return -1;
	}
	buf_append(&d->b, data, size);
	return 0;
}

int toolcache_store(struct toolcache *tc, const char *name, const json_t *lists)
{
	if (tc == NULL || !toolcache_name_ok(name) ||
	    !toolcache_lists_ok(lists))
		return -EINVAL;
	json_t *doc = json_object();
	json_object_set_new(doc, "format", json_integer(TOOLCACHE_FORMAT));
	json_object_set_new(doc, "name", json_string(name));
	json_object_set_new(doc, "written",
			    json_integer((json_int_t)time(NULL)));
	/* jansson counts references even on const values; doc holds lists
	 * only while it is dumped, so lists comes back unchanged. */
	json_object_set(doc, "lists", (json_t *)lists);

	struct toolcache_dump d = {.too_big = false};
	buf_init(&d.b);
	char *path = NULL;
	int rc = json_dump_callback(doc, toolcache_dump_cb, &d,
				    JSON_SORT_KEYS | JSON_COMPACT);
	if (rc < 0) {
		rc = d.too_big ? -EFBIG : -EINVAL;
		goto out;
	}
	path = toolcache_path(tc, name);
	rc = fsutil_write_atomic(path, d.b.data, d.b.len, 0600);
	if (rc < 0)
		log_warn("cannot write tool cache %s.json: %s", name,
			 strerror(-rc));
out:
	free(path);
	buf_free(&d.b);
	json_decref(doc);
	return rc;
}

/* Every field must be what toolcache_store writes: anything else is a
 * file we did not write for this name, whatever it claims. */
static const char *toolcache_doc_problem(const json_t *doc, const char *name)
{
	if (!json_is_object(doc))
		return "not an object";
	if (json_object_size(doc) != 4)
		return "unexpected fields";
	const json_t *format = json_object_get(doc, "format");
	if (!json_is_integer(format) ||
	    json_integer_value(format) != TOOLCACHE_FORMAT)
		return "unknown format";
	const json_t *n = json_object_get(doc, "name");
	if (!json_is_string(n) || strcmp(json_string_value(n), name) != 0)
		return "written under another name";
	const json_t *written = json_object_get(doc, "written");
	if (!json_is_integer(written) || json_integer_value(written) < 0)
		return "bad write time";
	if (!toolcache_lists_ok(json_object_get(doc, "lists")))
		return "lists of the wrong shape";
	return NULL;
}

json_t *toolcache_load(struct toolcache *tc, const char *name)
{
	if (tc == NULL)
		return NULL;
	if (!toolcache_name_ok(name)) {
		log_warn("refusing a tool cache name that is not 64 hex "
			 "digits");
		return NULL;
	}
	char *path = toolcache_path(tc, name);
	char *data = NULL;
	size_t len = 0;
	json_t *doc = NULL;
	json_t *lists = NULL;
	int rc = fsutil_read_file(path, TOOLCACHE_MAX_BYTES, &data, &len);
	if (rc == -ENOENT)
		goto out;
	if (rc == -EFBIG) {
		log_warn("tool cache %s.json is over %d bytes; ignored", name,
			 TOOLCACHE_MAX_BYTES);
		goto out;
	}
	if (rc < 0) {
		log_warn("tool cache %s.json is unreadable (%s); ignored", name,
			 strerror(-rc));
		goto out;
	}
	json_error_t err;
	doc = json_loadb(data, len, JSON_REJECT_DUPLICATES, &err);
	if (doc == NULL) {
		/* err.text may quote the file; the position is enough. */
		log_warn("tool cache %s.json is not JSON (line %d, column "
			 "%d); ignored",
			 name, err.line, err.column);
		goto out;
	}
	const char *problem = toolcache_doc_problem(doc, name);
	if (problem) {
		log_warn("tool cache %s.json: %s; ignored", name, problem);
		goto out;
	}
	lists = json_incref(json_object_get(doc, "lists"));
out:
	json_decref(doc);
	free(data);
	free(path);
	return lists;
}

void toolcache_drop(struct toolcache *tc, const char *name)
{
	if (tc == NULL || !toolcache_name_ok(name))
		return;
	char *path = toolcache_path(tc, name);
	if (unlink(path) < 0 && errno != ENOENT)
		log_warn("cannot remove tool cache %s.json: %s", name,
			 strerror(errno));
	free(path);
}
