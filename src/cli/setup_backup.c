/* Backups of `mcpvisor setup` runs and their undo: one folder per run in
 * the state directory, the files' bytes as they were and a manifest. */
#include "cli/setup_backup.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config/config.h"
#include "config/jsonc.h"
#include "config/jsonc_edit.h"
#include "util/fsutil.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

#define BACKUP_MANIFEST "manifest.json"
#define BACKUP_UNDONE ".undone"
/* Runs of one host within one second get -02, -03...: at most this many. */
#define BACKUP_MAX_SAME_SECOND 99
#define BACKUP_MAX_MANIFEST (1024 * 1024)
/* A backed-up file is one setup read: the hosts' bound. */
#define BACKUP_MAX_FILE (64 * 1024 * 1024)

static char *backup_root(const char *state_dir)
{
	return xasprintf("%s/%s", state_dir, BACKUP_DIR_NAME);
}

/* A fresh run folder: HOST-STAMP, or HOST-STAMP-NN when a run of this
 * second (done or undone) has the name. */
static int backup_mkdir(const char *root, const char *host, char **out)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
	for (int i = 1; i <= BACKUP_MAX_SAME_SECOND; i++) {
		char *d = i == 1 ? xasprintf("%s/%s-%s", root, host, stamp)
				 : xasprintf("%s/%s-%s-%02d", root, host, stamp,
					     i);
		char *undone = xasprintf("%s%s", d, BACKUP_UNDONE);
		struct stat st;
		bool taken = lstat(undone, &st) == 0;
		free(undone);
		if (!taken && mkdir(d, 0700) == 0) {
			*out = d;
			return 0;
		}
		int e = errno;
		free(d);
		if (!taken && e != EEXIST)
			return -e;
	}
	return -EEXIST;
}

int backup_write(const char *state_dir, const char *host,
		 const struct backup_file *files, size_t n, char **where,
		 char **err)
{
	*where = NULL;
	char *root = backup_root(state_dir);
	char *dir = NULL, *text = NULL;
	json_t *man = json_pack("{s:s,s:[]}", "host", host, "files");
	int rc;
	if ((rc = fsutil_private_dir(state_dir, true, err)) < 0 ||
	    (rc = fsutil_private_dir(root, true, err)) < 0)
		goto fail;
	if ((rc = backup_mkdir(root, host, &dir)) < 0) {
		*err = xasprintf("cannot make a backup folder in %s: %s", root,
				 strerror(-rc));
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		char hex[SHA256_HEX_BYTES];
		sha256_hex(files[i].after, strlen(files[i].after), hex);
		json_t *f =
			json_pack("{s:s,s:b,s:i,s:s}", "path", files[i].path,
				  "existed", files[i].before != NULL, "mode",
				  (int)files[i].mode, "written", hex);
		if (files[i].before) {
			char *name = xasprintf("%zu.bak", i);
			char *p = xasprintf("%s/%s", dir, name);
			rc = fsutil_write_atomic(p, files[i].before,
						 files[i].before_len, 0600);
			json_object_set_new(f, "backup", json_string(name));
			free(name);
			if (rc < 0)
				*err = xasprintf("cannot write %s: %s", p,
						 strerror(-rc));
			free(p);
		}
		if (files[i].moved)
			json_object_set_new(f, "moved",
					    json_deep_copy(files[i].moved));
		json_array_append_new(json_object_get(man, "files"), f);
		if (rc < 0)
			goto fail;
	}
	text = json_dumps(man, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	char *mp = xasprintf("%s/%s", dir, BACKUP_MANIFEST);
	rc = fsutil_write_atomic(mp, text, strlen(text), 0600);
	if (rc < 0)
		*err = xasprintf("cannot write %s: %s", mp, strerror(-rc));
	free(mp);
	if (rc < 0)
		goto fail;
	*where = dir;
	dir = NULL;
fail:
	free(root);
	free(dir);
	free(text);
	json_decref(man);
	return rc;
}

static int backup_write_at(const char *path, const void *data, size_t len,
			   mode_t mode, char **err)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	int rc = 0;
	if (slash && slash != dir) {
		*slash = '\0';
		rc = fsutil_mkdir_p(dir, 0700);
	}
	free(dir);
	if (rc == 0)
		rc = fsutil_write_atomic(path, data, len, mode);
	/* The mode as it was, whatever the umask took from it. */
	if (rc == 0 && chmod(path, mode) < 0)
		rc = -errno;
	if (rc < 0)
		*err = xasprintf("cannot write %s: %s", path, strerror(-rc));
	return rc;
}

int backup_put(const struct backup_file *f, char **err)
{
	return backup_write_at(f->path, f->after, strlen(f->after), f->mode,
			       err);
}

/* Whether the run in dir wrote file as its host's file (the manifest's
 * entry that moved no servers in). */
static bool backup_wrote(const char *dir, const char *file)
{
	char *mp = xasprintf("%s/%s", dir, BACKUP_MANIFEST);
	char *text = NULL;
	bool wrote = false;
	if (fsutil_read_file(mp, BACKUP_MAX_MANIFEST, &text, NULL) == 0) {
		json_t *man = json_loads(text, 0, NULL);
		size_t i;
		json_t *f;
		json_array_foreach(json_object_get(man, "files"), i, f)
		{
			const char *path =
				json_string_value(json_object_get(f, "path"));
			if (path && strcmp(path, file) == 0 &&
			    json_object_get(f, "moved") == NULL)
				wrote = true;
		}
		json_decref(man);
	}
	free(text);
	free(mp);
	return wrote;
}

/* The latest run folder of host not yet undone (file non-NULL: of those
 * that wrote file), or NULL. */
static char *backup_latest(const char *root, const char *host, const char *file)
{
	DIR *d = opendir(root);
	if (d == NULL)
		return NULL;
	char *best = NULL;
	size_t hl = strlen(host);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		const char *n = de->d_name;
		size_t len = strlen(n);
		if (strncmp(n, host, hl) != 0 || n[hl] != '-' ||
		    (len > strlen(BACKUP_UNDONE) &&
		     strcmp(n + len - strlen(BACKUP_UNDONE), BACKUP_UNDONE) ==
			     0))
			continue;
		/* claude-code-... must not pass for a run of "claude". */
		if (n[hl + 1] < '0' || n[hl + 1] > '9')
			continue;
		if (best != NULL && strcmp(n, best) <= 0)
			continue;
		if (file) {
			char *dir = xasprintf("%s/%s", root, n);
			bool wrote = backup_wrote(dir, file);
			free(dir);
			if (!wrote)
				continue;
		}
		free(best);
		best = xstrdup(n);
	}
	closedir(d);
	return best;
}

/* Whether the file at path is what setup wrote (its SHA-256). */
static bool backup_unchanged(const char *path, const char *written)
{
	char *text = NULL;
	size_t len = 0;
	if (fsutil_read_user_file(path, BACKUP_MAX_FILE, &text, &len) < 0)
		return false;
	char hex[SHA256_HEX_BYTES];
	sha256_hex(text, len, hex);
	free(text);
	return strcmp(hex, written) == 0;
}

static int backup_restore(const char *dir, json_t *f)
{
	const char *path = json_string_value(json_object_get(f, "path"));
	const char *bak = json_string_value(json_object_get(f, "backup"));
	mode_t mode = (mode_t)json_integer_value(json_object_get(f, "mode"));
	if (!json_is_true(json_object_get(f, "existed"))) {
		if (unlink(path) < 0 && errno != ENOENT) {
			fprintf(stderr,
				"mcpvisor setup: cannot remove %s: %s\n", path,
				strerror(errno));
			return -1;
		}
		printf("removed %s (setup had created it)\n", path);
		return 0;
	}
	char *p = xasprintf("%s/%s", dir, bak ? bak : "?");
	char *text = NULL, *err = NULL;
	size_t len = 0;
	int rc = fsutil_read_file(p, BACKUP_MAX_FILE, &text, &len);
	if (rc < 0)
		fprintf(stderr, "mcpvisor setup: cannot read %s: %s\n", p,
			strerror(-rc));
	else if ((rc = backup_write_at(path, text, len, mode, &err)) < 0)
		fprintf(stderr, "mcpvisor setup: %s\n", err);
	else
		printf("restored %s from %s\n", path, p);
	free(p);
	free(text);
	free(err);
	return rc;
}

/* mcpvisor's config changed since the run: out with the servers the run
 * added that are still as it added them, cut from its text; every other
 * byte stays. */
static int backup_take_back(json_t *f)
{
	const char *path = json_string_value(json_object_get(f, "path"));
	json_t *moved = json_object_get(f, "moved");
	char *text = NULL, *err = NULL, *out = NULL;
	size_t len = 0, olen = 0;
	struct jsonc *j = NULL;
	struct jsonc_error je;
	const struct jsonc_node *servers = NULL;
	int rc =
		fsutil_read_user_file(path, CONFIG_MAX_FILE_BYTES, &text, &len);
	if (rc == 0 && jsonc_parse(text, len, JSONC_STRICT, &j, &je) == 0)
		servers = jsonc_member(jsonc_root(j), "mcpServers");
	if (servers == NULL || !json_is_object(servers->value)) {
		fprintf(stderr,
			"mcpvisor setup: %s is no longer a config with "
			"\"mcpServers\"; left as it is\n",
			path);
		rc = -EINVAL;
		goto out;
	}
	struct jsonc_edit *e = jsonc_edit_new(j);
	const char *name;
	json_t *was;
	json_object_foreach(moved, name, was)
	{
		const struct jsonc_node *now = jsonc_member(servers, name);
		if (now && json_equal(now->value, was)) {
			jsonc_edit_drop(e, now);
			printf("removed server %s from %s\n", name, path);
		} else if (now) {
			printf("kept server %s in %s: changed since setup "
			       "moved it\n",
			       name, path);
		}
	}
	if ((rc = jsonc_edit_finish(e, &out, &olen)) < 0) {
		fprintf(stderr,
			"mcpvisor setup: %s: cannot take the servers "
			"out; left as it is\n",
			path);
		goto out;
	}
	rc = backup_write_at(path, out, olen, 0600, &err);
	if (rc < 0)
		fprintf(stderr, "mcpvisor setup: %s\n", err);
out:
	jsonc_free(j);
	free(text);
	free(out);
	free(err);
	return rc;
}

int backup_undo(const char *state_dir, const char *host, const char *file,
		bool force)
{
	char *root = backup_root(state_dir);
	char *name = backup_latest(root, host, file);
	char *dir = NULL, *mp = NULL, *text = NULL, *done = NULL;
	json_t *man = NULL;
	int rc = CLI_FAILED;
	if (name == NULL) {
		fprintf(stderr,
			"mcpvisor setup: no setup of %s%s%s to undo (no backup "
			"in %s)\n",
			host, file ? " with " : "", file ? file : "", root);
		goto out;
	}
	dir = xasprintf("%s/%s", root, name);
	mp = xasprintf("%s/%s", dir, BACKUP_MANIFEST);
	int e = fsutil_read_file(mp, BACKUP_MAX_MANIFEST, &text, NULL);
	if (e == 0)
		man = json_loads(text, 0, NULL);
	json_t *files = json_object_get(man, "files");
	if (!json_is_array(files)) {
		fprintf(stderr, "mcpvisor setup: %s: %s\n", mp,
			e < 0 ? strerror(-e) : "not a backup manifest");
		goto out;
	}
	size_t i;
	json_t *f;
	bool changed = false;
	json_array_foreach(files, i, f)
	{
		const char *path =
			json_string_value(json_object_get(f, "path"));
		const char *w =
			json_string_value(json_object_get(f, "written"));
		if (path == NULL || w == NULL) {
			fprintf(stderr,
				"mcpvisor setup: %s: not a backup "
				"manifest\n",
				mp);
			goto out;
		}
		/* Another host's setup writes mcpvisor's config too:
		 * that is no reason to refuse. */
		if (!backup_unchanged(path, w) &&
		    json_object_get(f, "moved") == NULL) {
			fprintf(stderr,
				"mcpvisor setup: %s changed since setup wrote "
				"it%s\n",
				path,
				force ? "; restoring it anyway (--force)" : "");
			changed = true;
		}
	}
	if (changed && !force) {
		fprintf(stderr, "mcpvisor setup: nothing restored; --undo "
				"--force restores the backup over those "
				"changes\n");
		goto out;
	}
	printf("undoing the setup of %s of %s\n", host,
	       name + strlen(host) + 1);
	rc = CLI_OK;
	json_array_foreach(files, i, f)
	{
		const char *path =
			json_string_value(json_object_get(f, "path"));
		const char *w =
			json_string_value(json_object_get(f, "written"));
		bool partial = json_object_get(f, "moved") &&
			       !backup_unchanged(path, w);
		if ((partial ? backup_take_back(f) : backup_restore(dir, f)) <
		    0)
			rc = CLI_FAILED;
	}
	done = xasprintf("%s%s", dir, BACKUP_UNDONE);
	if (rc == CLI_OK && rename(dir, done) < 0) {
		fprintf(stderr, "mcpvisor setup: cannot mark %s undone: %s\n",
			dir, strerror(errno));
		rc = CLI_FAILED;
	}
out:
	json_decref(man);
	free(root);
	free(name);
	free(dir);
	free(mp);
	free(text);
	free(done);
	return rc;
}
