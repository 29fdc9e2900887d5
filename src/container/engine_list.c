/*
 * The containers that carry our owner label, as the engine tells them:
 * `ps -a -q --no-trunc --filter label=...` for the ids, then `container
 * inspect` with one format docker and podman both read. The output is
 * another program's: every field is checked, bounded, and a line that is
 * not of the format is skipped.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "container/engine.h"
#include "container/engine_int.h"
#include "util/log.h"
#include "util/xmalloc.h"

/* Ids per `container inspect`: keeps each answer far below
 * ENGINE_OUT_MAX, whatever the labels. */
#define ENGINE_INSPECT_BATCH 64
#define ENGINE_LIST_MAX 4096
/* A full id, as `--no-trunc` and inspect give it: a shorter one would be
 * a prefix the engine could match to another container, or an id cut by
 * ENGINE_OUT_MAX. */
#define ENGINE_ID_LEN 64
#define ENGINE_FIELD_MAX 1024

/* One line per container; a tab never occurs in an id, a name or a
 * bool, and the labels come as JSON, which escapes tabs and newlines. */
#define ENGINE_INSPECT_FORMAT                                                  \
	"{{.Id}}\t{{.Name}}\t{{.State.Running}}\t{{json .Config.Labels}}"

static bool engine_hex_id(const char *s, size_t n)
{
	if (n != ENGINE_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!isxdigit((unsigned char)s[i]) ||
		    isupper((unsigned char)s[i]))
			return false;
	}
	return true;
}

/* The ids `ps -q` printed, one a line; anything else is skipped (a last
 * line cut by the output's bound too: it is shorter than an id). */
static size_t engine_parse_ids(const char *out, char ***ids)
{
	size_t n = 0;
	*ids = NULL;
	const char *p = out;
	while (*p && n < ENGINE_LIST_MAX) {
		size_t len = strcspn(p, "\n");
		const char *s = p;
		size_t k = len;
		while (k > 0 && isspace((unsigned char)*s)) {
			s++;
			k--;
		}
		while (k > 0 && isspace((unsigned char)s[k - 1]))
			k--;
		bool dup = false;
		for (size_t i = 0; engine_hex_id(s, k) && i < n && !dup; i++)
			dup = strlen((*ids)[i]) == k &&
			      memcmp((*ids)[i], s, k) == 0;
		if (engine_hex_id(s, k) && !dup) {
			*ids = xrealloc(*ids, (n + 1) * sizeof **ids);
			(*ids)[n++] = xstrndup(s, k);
		} else if (k > 0 && !dup) {
			log_debug("engine ps: skipped a line that is not an "
				  "id");
		}
		p += len;
		if (*p == '\n')
			p++;
	}
	return n;
}

static void engine_container_clear(struct engine_container *c)
{
	free(c->id);
	free(c->name);
	free(c->owner);
	free(c->server);
}

/* A label's value as a string of ours, NULL when absent or not a string
 * of reasonable size. */
static const char *engine_label(json_t *labels, const char *name)
{
	json_t *v = json_object_get(labels, name);
	if (!json_is_string(v) || json_string_length(v) > ENGINE_FIELD_MAX ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return json_string_value(v);
}

/* One inspect line: "ID\tNAME\tRUNNING\tLABELS-JSON". */
static bool engine_parse_line(char *line, struct engine_container *c)
{
	char *f[4];
	for (int i = 0; i < 3; i++) {
		f[i] = line;
		char *tab = strchr(line, '\t');
		if (!tab)
			return false;
		*tab = '\0';
		line = tab + 1;
	}
	f[3] = line;
	const char *name = f[1][0] == '/' ? f[1] + 1 : f[1];
	size_t name_len = strlen(name);
	if (!engine_hex_id(f[0], strlen(f[0])) || name_len == 0 ||
	    name_len > ENGINE_FIELD_MAX)
		return false;
	for (size_t i = 0; i < name_len; i++) {
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return false;
	}
	json_t *labels = json_loads(f[3], JSON_REJECT_DUPLICATES, NULL);
	const char *owner = engine_label(labels, ENGINE_LABEL_OWNER);
	const char *server = engine_label(labels, ENGINE_LABEL_SERVER);
	bool ok = json_is_object(labels) && owner;
	if (ok) {
		c->id = xstrdup(f[0]);
		c->name = xstrdup(name);
		c->owner = xstrdup(owner);
		c->server = xstrdup(server ? server : "");
		c->running = strcmp(f[2], "true") == 0;
	}
	json_decref(labels);
	return ok;
}

static void engine_parse_inspect(char *out, struct engine_container **list,
				 size_t *n)
{
	char *save = NULL;
	for (char *line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t len = strlen(line);
		if (len > 0 && line[len - 1] == '\r')
			line[len - 1] = '\0';
		struct engine_container c = {0};
		if (!engine_parse_line(line, &c)) {
			log_debug("engine inspect: skipped a line not of "
				  "its format");
			continue;
		}
		bool dup = false;
		for (size_t i = 0; i < *n && !dup; i++)
			dup = strcmp((*list)[i].id, c.id) == 0;
		if (dup || *n >= ENGINE_LIST_MAX) {
			engine_container_clear(&c);
			continue;
		}
		*list = xrealloc(*list, (*n + 1) * sizeof **list);
		(*list)[(*n)++] = c;
	}
}

/* One `container inspect` over ids[0..n). 0, or -EIO with *why. */
static int engine_inspect_batch(const char *engine, uint64_t timeout_ms,
				char *const *ids, size_t n,
				struct engine_container **list, size_t *count,
				char **why)
{
	const char *args[ENGINE_ARGS_MAX + 1];
	size_t a = 0;
	args[a++] = "container";
	args[a++] = "inspect";
	args[a++] = "--format";
	args[a++] = ENGINE_INSPECT_FORMAT;
	for (size_t i = 0; i < n; i++)
		args[a++] = ids[i];
	args[a] = NULL;
	struct engine_result r;
	int rc = engine_run_sync(engine, args, timeout_ms, &r);
	size_t before = *count;
	if (rc == 0)
		engine_parse_inspect(r.out, list, count);
	/* A container removed between ps and inspect makes inspect fail for
	 * it alone: the others' lines still count. */
	if (rc == 0 && (r.exit_status == 0 || *count > before ||
			engine_says_gone(r.err_line))) {
		engine_result_clear(&r);
		return 0;
	}
	*why = engine_why(engine, "inspect", &r);
	rc = r.err < 0 ? r.err : -EIO;
	engine_result_clear(&r);
	return rc;
}

int engine_list_owned_sync(const char *engine, uint64_t timeout_ms,
			   struct engine_container **out, size_t *n, char **why)
{
	*out = NULL;
	*n = 0;
	if (why)
		*why = NULL;
	char *reason = NULL;
	const char *ps[] = {"ps",	"-a",
			    "-q",	"--no-trunc",
			    "--filter", "label=" ENGINE_LABEL_OWNER,
			    NULL};
	struct engine_result r;
	int rc = engine_run_sync(engine, ps, timeout_ms, &r);
	if (rc == 0 && r.exit_status != 0)
		rc = -EIO;
	if (rc < 0) {
		reason = engine_why(engine, "ps", &r);
		engine_result_clear(&r);
		goto fail;
	}
	char **ids = NULL;
	size_t nids = engine_parse_ids(r.out, &ids);
	engine_result_clear(&r);
	struct engine_container *list = NULL;
	size_t count = 0;
	for (size_t i = 0; i < nids && rc == 0; i += ENGINE_INSPECT_BATCH) {
		size_t k = nids - i < ENGINE_INSPECT_BATCH
				   ? nids - i
				   : ENGINE_INSPECT_BATCH;
		rc = engine_inspect_batch(engine, timeout_ms, ids + i, k, &list,
					  &count, &reason);
	}
	for (size_t i = 0; i < nids; i++)
		free(ids[i]);
	free(ids);
	if (rc < 0) {
		engine_containers_free(list, count);
		goto fail;
	}
	*out = list;
	*n = count;
	return 0;
fail:
	if (why)
		*why = reason;
	else
		free(reason);
	return rc;
}

void engine_containers_free(struct engine_container *c, size_t n)
{
	if (!c)
		return;
	for (size_t i = 0; i < n; i++)
		engine_container_clear(&c[i]);
	free(c);
}
