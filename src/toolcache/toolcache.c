/*
 * The tool cache: owns CACHE_DIR/tools/ and CACHE_DIR/salt, writes each
 * server's last lists atomically under a hashed name and reads them back
 * only when the file proves to be ours in every field. Attached to a loop,
 * it keeps the files' texts in memory and writes in the thread pool.
 */
#include "toolcache/toolcache.h"

#include <dirent.h>
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

/* A file's text as it is (or is about to be) on disk. */
struct toolcache_mem {
	char name[TOOLCACHE_NAME_LEN + 1];
	char *text;
	size_t len;
};

/* A write or unlink waiting for the thread pool. */
struct toolcache_op {
	struct toolcache_op *next;
	struct toolcache *tc;
	uv_work_t req;
	char name[TOOLCACHE_NAME_LEN + 1];
	char *path;
	char *text; /* NULL: unlink */
	size_t len;
	int rc;
};

struct toolcache {
	char *dir; /* CACHE_DIR/tools */
	char salt[TOOLCACHE_SALT_LEN + 1];

	uv_loop_t *loop; /* NULL: every call goes to the disk */
	struct toolcache_mem *mem;
	size_t nmem, capmem;
	size_t mem_bytes;
	/* Every file of tools/ is in mem: a name not there has no file. */
	bool complete;
	struct toolcache_op *queue; /* not started, oldest first */
	struct toolcache_op *running;
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

static void toolcache_ops_finish(struct toolcache *tc);
static void toolcache_mem_clear(struct toolcache *tc);
static void toolcache_mem_put(struct toolcache *tc, const char *name,
			      const char *text, size_t len);
static void toolcache_enqueue(struct toolcache *tc, const char *name,
			      char *text, size_t len);

void toolcache_free(struct toolcache *tc)
{
	if (tc == NULL)
		return;
	toolcache_ops_finish(tc);
	toolcache_mem_clear(tc);
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
		/* The server's instructions, offered to clients with its
		 * lists before it runs. */
		if (strcmp(key, "instructions") == 0) {
			if (!json_is_string(v))
				return false;
			continue;
		}
		/* The server's MCP era when it is known to be a 2025 one: its
		 * next start sends initialize without a probe. */
		if (strcmp(key, "era") == 0) {
			if (!json_is_string(v))
				return false;
			continue;
		}
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
	if (tc->loop != NULL) {
		toolcache_mem_put(tc, name, d.b.data, d.b.len);
		char *text = xmalloc(d.b.len + 1);
		memcpy(text, d.b.data, d.b.len);
		toolcache_enqueue(tc, name, text, d.b.len);
		rc = 0;
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

/* The lists in one file's text, or NULL with a warning. */
static json_t *toolcache_parse(const char *name, const char *data, size_t len)
{
	json_error_t err;
	json_t *lists = NULL;
	json_t *doc = json_loadb(data, len, JSON_REJECT_DUPLICATES, &err);
	if (doc == NULL) {
		/* err.text may quote the file; the position is enough. */
		log_warn("tool cache %s.json is not JSON (line %d, column "
			 "%d); ignored",
			 name, err.line, err.column);
		return NULL;
	}
	const char *problem = toolcache_doc_problem(doc, name);
	if (problem)
		log_warn("tool cache %s.json: %s; ignored", name, problem);
	else
		lists = json_incref(json_object_get(doc, "lists"));
	json_decref(doc);
	return lists;
}

static struct toolcache_mem *toolcache_mem_find(struct toolcache *tc,
						const char *name)
{
	for (size_t i = 0; i < tc->nmem; i++) {
		if (strcmp(tc->mem[i].name, name) == 0)
			return &tc->mem[i];
	}
	return NULL;
}

static void toolcache_mem_drop(struct toolcache *tc, const char *name)
{
	struct toolcache_mem *m = toolcache_mem_find(tc, name);
	if (m == NULL)
		return;
	tc->mem_bytes -= m->len;
	free(m->text);
	*m = tc->mem[--tc->nmem];
}

/* Keeps a copy of text under name; past TOOLCACHE_MEM_MAX it is left on
 * disk only, and loads of what is not in memory read the disk again. */
static void toolcache_mem_put(struct toolcache *tc, const char *name,
			      const char *text, size_t len)
{
	toolcache_mem_drop(tc, name);
	if (len > TOOLCACHE_MEM_MAX - tc->mem_bytes) {
		tc->complete = false;
		return;
	}
	if (tc->nmem == tc->capmem) {
		tc->capmem = tc->capmem ? tc->capmem * 2 : 16;
		tc->mem = xrealloc(tc->mem, tc->capmem * sizeof *tc->mem);
	}
	struct toolcache_mem *m = &tc->mem[tc->nmem++];
	memcpy(m->name, name, TOOLCACHE_NAME_LEN + 1);
	m->text = xmalloc(len + 1);
	memcpy(m->text, text, len);
	m->text[len] = '\0';
	m->len = len;
	tc->mem_bytes += len;
}

static void toolcache_mem_clear(struct toolcache *tc)
{
	for (size_t i = 0; i < tc->nmem; i++)
		free(tc->mem[i].text);
	free(tc->mem);
	tc->mem = NULL;
	tc->nmem = tc->capmem = 0;
	tc->mem_bytes = 0;
}

static json_t *toolcache_load_file(struct toolcache *tc, const char *name)
{
	char *path = toolcache_path(tc, name);
	char *data = NULL;
	size_t len = 0;
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
	lists = toolcache_parse(name, data, len);
out:
	free(data);
	free(path);
	return lists;
}

bool toolcache_empty(const struct toolcache *tc)
{
	return tc == NULL ||
	       (tc->loop != NULL && tc->complete && tc->nmem == 0);
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
	if (tc->loop != NULL) {
		struct toolcache_mem *m = toolcache_mem_find(tc, name);
		if (m != NULL)
			return toolcache_parse(name, m->text, m->len);
		if (tc->complete)
			return NULL;
	}
	return toolcache_load_file(tc, name);
}

/* ---- writes in the thread pool ---- */

static int toolcache_op_run(struct toolcache_op *op)
{
	if (op->text != NULL)
		return fsutil_write_atomic(op->path, op->text, op->len, 0600);
	if (unlink(op->path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static void toolcache_op_free(struct toolcache_op *op)
{
	if (op->rc < 0)
		log_warn("cannot %s tool cache %s.json: %s",
			 op->text ? "write" : "remove", op->name,
			 strerror(-op->rc));
	free(op->path);
	free(op->text);
	free(op);
}

static void toolcache_work_cb(uv_work_t *req)
{
	struct toolcache_op *op = req->data;
	op->rc = toolcache_op_run(op);
}

static void toolcache_next(struct toolcache *tc);

static void toolcache_after_work_cb(uv_work_t *req, int status)
{
	struct toolcache_op *op = req->data;
	struct toolcache *tc = op->tc;
	if (status < 0)
		op->rc = status;
	tc->running = NULL;
	toolcache_op_free(op);
	toolcache_next(tc);
}

/* One op at a time, in order: they may name the same file. */
static void toolcache_next(struct toolcache *tc)
{
	while (tc->running == NULL && tc->queue != NULL) {
		struct toolcache_op *op = tc->queue;
		tc->queue = op->next;
		op->req.data = op;
		if (tc->loop != NULL &&
		    uv_queue_work(tc->loop, &op->req, toolcache_work_cb,
				  toolcache_after_work_cb) == 0) {
			tc->running = op;
			return;
		}
		op->rc = toolcache_op_run(op);
		toolcache_op_free(op);
	}
}

/* Queues a write (text, taken) or an unlink (text NULL) of name. */
static void toolcache_enqueue(struct toolcache *tc, const char *name,
			      char *text, size_t len)
{
	struct toolcache_op **pp = &tc->queue;
	for (; *pp != NULL; pp = &(*pp)->next) {
		if (strcmp((*pp)->name, name) == 0) {
			/* Not started: the newer content replaces it. */
			free((*pp)->text);
			(*pp)->text = text;
			(*pp)->len = len;
			return;
		}
	}
	struct toolcache_op *op = xcalloc(1, sizeof *op);
	op->tc = tc;
	memcpy(op->name, name, TOOLCACHE_NAME_LEN + 1);
	op->path = toolcache_path(tc, name);
	op->text = text;
	op->len = len;
	*pp = op;
	toolcache_next(tc);
}

/* What is still queued, done on this thread (after the loop). */
static void toolcache_ops_finish(struct toolcache *tc)
{
	if (tc->running != NULL)
		log_warn("tool cache freed with a write in flight");
	tc->loop = NULL;
	toolcache_next(tc);
}

void toolcache_attach(struct toolcache *tc, uv_loop_t *loop)
{
	if (tc == NULL || tc->loop != NULL)
		return;
	tc->complete = true;
	DIR *d = opendir(tc->dir);
	if (d == NULL) {
		tc->complete = false;
	} else {
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			size_t n = strlen(de->d_name);
			char name[TOOLCACHE_NAME_LEN + 1];
			if (n != TOOLCACHE_NAME_LEN + 5 ||
			    strcmp(de->d_name + TOOLCACHE_NAME_LEN, ".json") !=
				    0)
				continue;
			memcpy(name, de->d_name, TOOLCACHE_NAME_LEN);
			name[TOOLCACHE_NAME_LEN] = '\0';
			if (!toolcache_name_ok(name))
				continue;
			char *path = toolcache_path(tc, name);
			char *data = NULL;
			size_t len = 0;
			/* What cannot be read now is read (and warned
			 * about) when it is asked for. */
			if (fsutil_read_file(path, TOOLCACHE_MAX_BYTES, &data,
					     &len) == 0)
				toolcache_mem_put(tc, name, data, len);
			else
				tc->complete = false;
			free(data);
			free(path);
		}
		closedir(d);
	}
	tc->loop = loop;
	log_debug("tool cache: %zu file(s), %zu bytes in memory%s", tc->nmem,
		  tc->mem_bytes, tc->complete ? "" : " (not all)");
}

void toolcache_detach(struct toolcache *tc)
{
	if (tc == NULL || tc->loop == NULL)
		return;
	/* Queued ops go on in the loop through their after-work callbacks;
	 * new ones are done at once. */
	tc->loop = NULL;
	toolcache_mem_clear(tc);
}

void toolcache_drop(struct toolcache *tc, const char *name)
{
	if (tc == NULL || !toolcache_name_ok(name))
		return;
	if (tc->loop != NULL) {
		toolcache_mem_drop(tc, name);
		toolcache_enqueue(tc, name, NULL, 0);
		return;
	}
	char *path = toolcache_path(tc, name);
	if (unlink(path) < 0 && errno != ENOENT)
		log_warn("cannot remove tool cache %s.json: %s", name,
			 strerror(errno));
	free(path);
}
