/* Taking a server's lock from the loop: tried at once, then again each
 * time its holder lets go (seen by a watch on the lock file). */
#include "auth/lockwait.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "auth/store.h"
#include "util/clock.h"
#include "util/filewatch.h"
#include "util/xmalloc.h"

struct lockwait {
	uv_timer_t timer; /* the next try */
	struct filewatch *watch;
	char *state_dir;
	char key[STORE_KEY_HEX + 1];
	uint64_t deadline_ms;
	lockwait_cb cb;
	void *arg;
};

static void lockwait_closed(uv_handle_t *h)
{
	struct lockwait *w = h->data;
	free(w->state_dir);
	free(w);
}

static void lockwait_end(struct lockwait *w)
{
	filewatch_free(w->watch);
	w->watch = NULL;
	uv_close((uv_handle_t *)&w->timer, lockwait_closed);
}

static void lockwait_timer_cb(uv_timer_t *t);

static void lockwait_watch_cb(void *arg, const char *path, unsigned events,
			      uint64_t span_ms)
{
	struct lockwait *w = arg;
	uv_timer_start(&w->timer, lockwait_timer_cb, 0, 0);
}

static void lockwait_try(struct lockwait *w)
{
	int fd = -1;
	int rc = store_lock(w->state_dir, w->key, false, &fd);
	if (rc == -EWOULDBLOCK && w->watch == NULL) {
		char *p = store_path(w->state_dir, w->key, ".lock");
		w->watch =
			filewatch_new(w->timer.loop, p, lockwait_watch_cb, w);
		free(p);
		/* A holder that let go between the try and the watch wrote
		 * where no one watched: without a second try the wait would
		 * last until the LOCKWAIT_RETRY_MS timer. */
		rc = store_lock(w->state_dir, w->key, false, &fd);
	}
	if (rc == -EWOULDBLOCK) {
		uint64_t now = clock_now_ms();
		if (now < w->deadline_ms) {
			uint64_t left = w->deadline_ms - now;
			uv_timer_start(&w->timer, lockwait_timer_cb,
				       left < LOCKWAIT_RETRY_MS
					       ? left
					       : LOCKWAIT_RETRY_MS,
				       0);
			return;
		}
		rc = -ETIMEDOUT;
	}
	lockwait_cb cb = w->cb;
	void *arg = w->arg;
	lockwait_end(w);
	cb(arg, rc == 0 ? fd : -1, rc);
}

static void lockwait_timer_cb(uv_timer_t *t)
{
	lockwait_try(t->data);
}

struct lockwait *lockwait_start(uv_loop_t *loop, const char *state_dir,
				const char *key, uint64_t max_ms,
				lockwait_cb cb, void *arg)
{
	struct lockwait *w = xcalloc(1, sizeof *w);
	uv_timer_init(loop, &w->timer);
	w->timer.data = w;
	w->state_dir = xstrdup(state_dir);
	snprintf(w->key, sizeof w->key, "%s", key);
	w->deadline_ms = clock_now_ms() + max_ms;
	w->cb = cb;
	w->arg = arg;
	uv_timer_start(&w->timer, lockwait_timer_cb, 0, 0);
	return w;
}

void lockwait_cancel(struct lockwait *w)
{
	if (w == NULL)
		return;
	lockwait_end(w);
}
