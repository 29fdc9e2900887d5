/*
 * The restart mark (see mark.h): STATE/restart.mark, written atomically, so
 * a reader sees either no mark or a whole one. Its first line is the old
 * runtime's pid alone, which is all that runtime/restart_mark.c (the
 * relay's reader) reads; the second is a JSON object with the rest.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "home/mark.h"
#include "proc/procfs.h"
#include "util/fsutil.h"
#include "util/paths.h"
#include "util/xmalloc.h"

#define MARK_NAME "restart.mark"
#define MARK_FILE_MAX 4096

static char *mark_path(const char *home)
{
	struct paths p;
	paths_resolve(&p, home);
	char *path = xasprintf("%s/" MARK_NAME, p.state_dir);
	paths_free(&p);
	return path;
}

/* Wall time: the mark is compared across processes. */
static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int mark_write(const char *home, long old_pid)
{
	struct paths p;
	paths_resolve(&p, home);
	int rc = fsutil_private_dir(p.state_dir, true, NULL);
	paths_free(&p);
	if (rc < 0)
		return rc;
	pid_t self = getpid();
	json_t *o = json_pack("{s:I,s:I,s:I,s:I}", "oldPid",
			      (json_int_t)old_pid, "byPid", (json_int_t)self,
			      "byStart", (json_int_t)procfs_start_time(self),
			      "time", (json_int_t)now_ms());
	char *js = json_dumps(o, JSON_SORT_KEYS);
	json_decref(o);
	char *s = xasprintf("%ld\n%s\n", old_pid, js);
	free(js);
	char *path = mark_path(home);
	rc = fsutil_write_atomic(path, s, strlen(s), 0600);
	free(path);
	free(s);
	return rc;
}

int mark_read(const char *home, struct restart_mark *m)
{
	memset(m, 0, sizeof *m);
	char *path = mark_path(home);
	char *text = NULL;
	int rc = fsutil_read_file(path, MARK_FILE_MAX, &text, NULL);
	free(path);
	if (rc < 0)
		return rc;
	const char *nl = strchr(text, '\n');
	json_t *o = nl ? json_loads(nl + 1, 0, NULL) : NULL;
	free(text);
	if (!json_is_object(o)) {
		json_decref(o);
		return -ESTALE; /* not a mark we wrote whole: ignore it */
	}
	m->old_pid = (long)json_integer_value(json_object_get(o, "oldPid"));
	m->by_pid = (long)json_integer_value(json_object_get(o, "byPid"));
	m->by_start =
		(uint64_t)json_integer_value(json_object_get(o, "byStart"));
	m->time_ms = (int64_t)json_integer_value(json_object_get(o, "time"));
	json_decref(o);
	int64_t age = now_ms() - m->time_ms;
	/* The restart process is checked by pid and start time: a pid
	 * reused since it died does not keep its mark alive. */
	if (m->by_pid <= 0 || age > MARK_MAX_AGE_MS ||
	    !procfs_alive((pid_t)m->by_pid, m->by_start))
		return -ESTALE;
	return 0;
}

int mark_clear(const char *home)
{
	char *path = mark_path(home);
	int rc = unlink(path) < 0 && errno != ENOENT ? -errno : 0;
	free(path);
	return rc;
}
