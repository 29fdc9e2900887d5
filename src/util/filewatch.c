/*
 * A file watched through its folder: the inotify watch, the filter by
 * name, the debounce timer and the re-arming of a watch whose folder went.
 */
#include "util/filewatch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/debounce.h"
#include "util/log.h"
#include "util/xmalloc.h"

#define FILEWATCH_HANDLES 3

struct filewatch {
	uv_loop_t *loop;
	char *path, *dir, *base;
	char *dir_base; /* the name libuv gives the folder's own events */
	filewatch_cb cb;
	void *arg;
	uv_fs_event_t ev;
	uv_timer_t due;	  /* the pending burst's due time */
	uv_timer_t rearm; /* retries while the folder is missing */
	struct debounce db;
	bool armed;
	bool freed;
	/* When path is a symlink (a dotfiles folder), the file an edit
	 * changes is its target: watched too, its bursts reported as
	 * path's. NULL otherwise, and in a target's own watch. */
	struct filewatch *target;
	struct filewatch *parent;
	int open_handles;
	/* The folder the watch is on: a folder at dir that is not this one
	 * (replaced, or gone) means the watch watches nothing useful. */
	dev_t dev;
	ino_t ino;
};

static void filewatch_closed_cb(uv_handle_t *h)
{
	struct filewatch *w = h->data;
	if (--w->open_handles > 0)
		return;
	free(w->path);
	free(w->dir);
	free(w->base);
	free(w->dir_base);
	free(w);
}

static struct filewatch *filewatch_make(uv_loop_t *loop, const char *path,
					filewatch_cb cb, void *arg,
					struct filewatch *parent);

/* Watches the target when path is a symlink, again after each change (the
 * link may point elsewhere now). */
static void filewatch_follow(struct filewatch *w)
{
	if (w->parent)
		return;
	struct stat st;
	char *real = lstat(w->path, &st) == 0 && S_ISLNK(st.st_mode)
			     ? realpath(w->path, NULL)
			     : NULL;
	if (real && w->target && strcmp(real, w->target->path) == 0) {
		free(real);
		return;
	}
	filewatch_free(w->target);
	/* The target's bursts go to w's callback (filewatch_due_cb). */
	w->target = real ? filewatch_make(w->loop, real, NULL, NULL, w) : NULL;
	free(real);
}

static void filewatch_due_cb(uv_timer_t *t)
{
	struct filewatch *w = t->data;
	unsigned n;
	uint64_t span;
	uint64_t now = clock_now_ms();
	if (debounce_take(&w->db, now, &n, &span)) {
		/* A target's burst is its link's; the callback may free the
		 * watch, so everything else is done first. */
		struct filewatch *top = w->parent ? w->parent : w;
		filewatch_follow(top);
		top->cb(top->arg, top->path, n, span);
		return;
	}
	/* The uv timer and the clock disagree by a millisecond: wait on. */
	if (debounce_pending(&w->db))
		uv_timer_start(&w->due, filewatch_due_cb,
			       debounce_wait_ms(&w->db, now), 0);
}

/* One more event in the burst: the due time moves. */
static void filewatch_note(struct filewatch *w)
{
	uint64_t now = clock_now_ms();
	debounce_event(&w->db, now);
	uv_timer_start(&w->due, filewatch_due_cb, debounce_wait_ms(&w->db, now),
		       0);
}

static void filewatch_event_cb(uv_fs_event_t *h, const char *name, int events,
			       int status);

/* Watches the folder at w->dir now: 0 or -errno (it does not exist). */
static int filewatch_arm(struct filewatch *w)
{
	int rc = uv_fs_event_start(&w->ev, filewatch_event_cb, w->dir, 0);
	if (rc < 0)
		return rc;
	struct stat st;
	if (stat(w->dir, &st) < 0) {
		rc = -errno;
		uv_fs_event_stop(&w->ev);
		return rc;
	}
	w->dev = st.st_dev;
	w->ino = st.st_ino;
	w->armed = true;
	return 0;
}

static void filewatch_rearm_cb(uv_timer_t *t)
{
	struct filewatch *w = t->data;
	if (filewatch_arm(w) < 0)
		return;
	uv_timer_stop(&w->rearm);
	log_info("watching %s again (its folder is back)", w->path);
	/* A file may have come with the folder. */
	filewatch_note(w);
}

/* The folder's watch died: the folder was removed or renamed away (maybe
 * replaced at once). Watch whatever is at dir now, else wait for it. */
static void filewatch_lost(struct filewatch *w)
{
	uv_fs_event_stop(&w->ev);
	w->armed = false;
	if (filewatch_arm(w) == 0) {
		log_info("%s: its folder was replaced; watching the new one",
			 w->path);
		filewatch_note(w);
		return;
	}
	log_warn("%s: its folder is gone; watching for it to come back",
		 w->path);
	uv_timer_start(&w->rearm, filewatch_rearm_cb, FILEWATCH_REARM_MS,
		       FILEWATCH_REARM_MS);
}

static bool filewatch_dir_same(const struct filewatch *w)
{
	struct stat st;
	return stat(w->dir, &st) == 0 && st.st_dev == w->dev &&
	       st.st_ino == w->ino;
}

static void filewatch_event_cb(uv_fs_event_t *h, const char *name, int events,
			       int status)
{
	(void)events;
	struct filewatch *w = h->data;
	if (w->freed || !w->armed)
		return;
	if (status < 0) {
		filewatch_lost(w);
		return;
	}
	if (name && strcmp(name, w->base) == 0) {
		filewatch_note(w);
		return;
	}
	/* The folder's own removal or move comes under the folder's name
	 * (libuv's name for an event without one); any other name is another
	 * file of the folder (the log beside the trust store, say), ignored
	 * without a look at the disk. */
	if (name && strcmp(name, w->dir_base) != 0)
		return;
	if (!filewatch_dir_same(w))
		filewatch_lost(w);
	else if (name == NULL)
		filewatch_note(w);
}

static struct filewatch *filewatch_make(uv_loop_t *loop, const char *path,
					filewatch_cb cb, void *arg,
					struct filewatch *parent)
{
	struct filewatch *w = xcalloc(1, sizeof *w);
	w->loop = loop;
	w->parent = parent;
	if (path[0] == '/') {
		w->path = xstrdup(path);
	} else {
		char cwd[4096];
		if (getcwd(cwd, sizeof cwd) == NULL)
			strcpy(cwd, "/");
		w->path = xasprintf("%s/%s", cwd, path);
	}
	char *slash = strrchr(w->path, '/');
	w->dir = slash == w->path
			 ? xstrdup("/")
			 : xstrndup(w->path, (size_t)(slash - w->path));
	w->base = xstrdup(slash + 1);
	const char *ds = strrchr(w->dir, '/');
	w->dir_base = xstrdup(ds && ds[1] ? ds + 1 : w->dir);
	w->cb = cb;
	w->arg = arg;
	debounce_init(&w->db, FILEWATCH_QUIET_MS, FILEWATCH_MAX_MS);
	uv_fs_event_init(loop, &w->ev);
	uv_timer_init(loop, &w->due);
	uv_timer_init(loop, &w->rearm);
	w->ev.data = w->due.data = w->rearm.data = w;
	w->open_handles = FILEWATCH_HANDLES;
	int rc = filewatch_arm(w);
	if (rc < 0) {
		log_warn("cannot watch %s yet (%s): trying again every %d ms",
			 w->dir, uv_strerror(rc), FILEWATCH_REARM_MS);
		uv_timer_start(&w->rearm, filewatch_rearm_cb,
			       FILEWATCH_REARM_MS, FILEWATCH_REARM_MS);
	}
	filewatch_follow(w);
	return w;
}

struct filewatch *filewatch_new(uv_loop_t *loop, const char *path,
				filewatch_cb cb, void *arg)
{
	return filewatch_make(loop, path, cb, arg, NULL);
}

void filewatch_free(struct filewatch *w)
{
	if (w == NULL)
		return;
	filewatch_free(w->target);
	w->target = NULL;
	w->freed = true;
	uv_close((uv_handle_t *)&w->ev, filewatch_closed_cb);
	uv_close((uv_handle_t *)&w->due, filewatch_closed_cb);
	uv_close((uv_handle_t *)&w->rearm, filewatch_closed_cb);
}

int filewatch_armed(const struct filewatch *w)
{
	return w->armed ? 1 : 0;
}
